"""Validate a workflow config against the JSON schema and fill in its defaults.

Light on purpose (json, yaml, jsonschema only): the Snakefile imports it at parse time.
"""

from __future__ import annotations

import copy
import difflib
import errno
import functools
import math
import os
import stat
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, validators

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A config value is invalid; the message names the offending key."""


# libyaml's parser where PyYAML has it (several times faster), else PyYAML's own
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_schema(path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """The config schema as a dict (a copy: the caller may change it)."""
    return copy.deepcopy(_parsed_schema(path))


@functools.cache
def _parsed_schema(path: Path) -> dict[str, Any]:
    with open(path) as fh:
        return yaml.load(fh, Loader=_SafeLoader)  # noqa: S506 (a safe loader)


def _with_defaults(validator_class):
    """A validator class that also writes each property's `default` into the instance."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": set_defaults})


# "integer" means an int: 4.0 is refused (JSON Schema would accept it, and then the trial's
# path, seeds and array shapes would get a float).
_TYPES = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda checker, value: isinstance(value, int) and not isinstance(value, bool)
)
StrictValidator = validators.extend(Draft202012Validator, type_checker=_TYPES)
_FillingValidator = _with_defaults(StrictValidator)


class _UniqueKeys:
    """A YAML loader's part that refuses a mapping with the same key twice (PyYAML keeps the
    last). Merge keys (``<<: *anchor``) still merge: only the mapping's own keys are compared, and a
    key written beside a merge overrides the merged one, as YAML says."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise ConfigError(
                    f"key {key!r} appears twice in one mapping (line {key_node.start_mark.line + 1}"
                    "): the first would be silently dropped"
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


class _UniqueKeyLoader(_UniqueKeys, _SafeLoader):
    """The config files' YAML loader: safe, and a key twice in one mapping is an error."""


# Largest YAML file read (config, claims): the paper's config is 12 KB, its claims 45 KB;
# a YAML file of megabytes takes seconds to parse, 50 MB minutes.
MAX_YAML_BYTES = 2**20


def load_yaml(path: str | Path) -> Any:
    """A YAML file's content; ConfigError naming the file when it is missing, not a regular
    file (a FIFO is never opened: it would block), larger than MAX_YAML_BYTES, unreadable, or
    has a duplicate key or bad YAML."""
    from matcond.core.paths import not_readable_as

    if problem := not_readable_as(path, "a YAML file"):
        raise ConfigError(f"{path} {problem}")
    if (size := os.path.getsize(path)) > MAX_YAML_BYTES:
        raise ConfigError(
            f"{path} is {size / 2**20:.1f} MiB, above the {MAX_YAML_BYTES // 2**20} MiB a "
            "config or claims file may have (they name settings; data belong in files)"
        )
    try:
        with open(path) as fh:
            return yaml.load(fh, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except (ConfigError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: {err}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path} cannot be read ({err})") from None


# The deepest a config's values nest (mappings and lists within each other): its own go ~8
# levels down; hundreds (``--config 'x=[[[...]]]'``) would exhaust Python's recursion.
MAX_DEPTH = 50


def check_depth(value: Any, prefix: str = "config key ") -> None:
    """ConfigError naming the key (``prefix`` and its mapping keys) whose value nests more
    than :data:`MAX_DEPTH` mappings and lists deep; walked without recursion, and a mapping
    or list reached again (a YAML alias) only where it lies deeper than before."""
    stack, deepest = [(value, "", 0)], {}
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, dict | list):
            if deepest.get(id(value), -1) >= depth:
                continue
            deepest[id(value)] = depth
        if depth > MAX_DEPTH:
            raise ConfigError(_too_deep(f"{prefix}{where}"))
        if isinstance(value, dict):
            stack += [(v, f"{where}.{k}" if where else str(k), depth + 1) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, where, depth + 1) for v in value]


def _too_deep(key: str) -> str:
    return (
        f"{key}: nested more than {MAX_DEPTH} levels deep (lists or mappings within each "
        "other), deeper than any config"
    )


def check_finite(value: Any, where: str = "", _seen: set[int] | None = None) -> None:
    """Raise ConfigError naming the key of the first NaN or infinite number in ``value``, or
    of an integer beyond 64 bits.
    A mapping or list reached again (a YAML alias) is checked once: nested aliases, each
    used many times, are a few nodes, not billions."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"config key {where or '(top level)'}: {value} is not a finite number")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        raise ConfigError(
            f"config key {where or '(top level)'}: {value} is beyond the 64-bit integers the "
            "workflow computes with"
        )
    if not isinstance(value, (dict, list)):
        return
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return
    seen.add(id(value))
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        check_finite(item, f"{where}.{key}" if where else str(key), seen)


def _key_path(error) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(top level)"


def _message(error, prefix: str) -> str:
    msg = f"{prefix}{_key_path(error)}: {error.message}"
    if isinstance(error.instance, str) and error.validator == "type" and _is_number(error.instance):
        msg += " (a number given as a string: YAML reads 1e-3 as a string, write 1.0e-3)"
    if (
        error.validator == "type"
        and isinstance(error.instance, float)
        and error.instance.is_integer()
        and "integer" in str(error.validator_value)
    ):
        msg += f" (write {error.instance:.0f}, an integer)"
    if error.validator == "enum":
        msg += f"; allowed: {', '.join(map(str, error.validator_value))}"
        if isinstance(error.instance, str):
            msg += did_you_mean(error.instance, map(str, error.validator_value))
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        for name in error.instance:
            if name not in known:
                msg += did_you_mean(str(name), known)
    return msg


def did_you_mean(name: str, known) -> str:
    """' (did you mean 'x'?)' for the known name closest to a misspelt ``name``, else ''."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def raise_first_error(validator, instance, prefix: str = "config key ") -> None:
    """Raise ConfigError for the first schema violation (the deepest, most specific one)."""
    errors = sorted(
        validator.iter_errors(instance),
        # a misspelt key also makes the key it should have been "required": name the misspelling
        key=lambda e: (-len(e.absolute_path), e.validator != "additionalProperties", e.message),
    )
    if errors:
        raise ConfigError(_message(errors[0], prefix))


# Tables under results/tables that are not an experiment's (and every gn_* one).
GENERATED_TABLES = ("theory", "readings", "diverged_trials")


def command_line_values(value: Any, where: str = "", _seen: set[int] | None = None) -> Any:
    """``--config`` values as a config file would give them. Snakemake reads ``key=false``
    and ``key={a: 1, b: [x]}`` with YAML's BaseLoader, which leaves every scalar a string
    ('false', '1'): each string scalar is read again as YAML ('false' -> False, '1' -> 1,
    '1e-3' stays a string as in a file). A mapping or list met twice is a YAML alias
    (``*name``), which the command line has no use for and which, nested, stands for billions
    of values: ConfigError, naming the key."""
    if _seen is None:
        check_depth(value, "--config ")
    seen = set() if _seen is None else _seen
    if isinstance(value, dict | list):
        if id(value) in seen:
            raise ConfigError(
                f"--config {where}: a YAML alias (*name) repeats a value; write each value out"
            )
        seen.add(id(value))
    if isinstance(value, dict):
        return {
            k: command_line_values(v, f"{where}.{k}" if where else str(k), seen)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [command_line_values(v, f"{where}[{i}]", seen) for i, v in enumerate(value)]
    if isinstance(value, str):
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        except RecursionError:  # a string Snakemake could not read as YAML either
            raise ConfigError(_too_deep(f"--config {where}")) from None
        return parsed if isinstance(parsed, bool | int | float | str) else value
    return value


class _UniqueKeyBaseLoader(_UniqueKeys, yaml.BaseLoader):
    """Snakemake's reader of ``--config`` values (BaseLoader), refusing a key given twice."""


def check_command_line(argv: list[str]) -> None:
    """ConfigError naming the key where a ``--config`` value of ``argv`` gives one key twice
    in a mapping (``defaults={lr: 0.1, lr: 0.5}``): Snakemake keeps the last silently."""
    values, inside = [], False
    for arg in argv:
        if arg == "--config" or arg.startswith("--config="):
            inside = True
            if arg.startswith("--config="):
                values.append(arg.removeprefix("--config="))
            continue
        if inside and arg.startswith("-"):
            inside = False
        elif inside and "=" in arg:
            values.append(arg)
    for item in values:
        key, _, text = item.partition("=")
        try:
            yaml.load(text, Loader=_UniqueKeyBaseLoader)  # noqa: S506 (BaseLoader: strings only)
        except ConfigError as err:
            raise ConfigError(f"--config {key}: {err}") from None
        except RecursionError:
            raise ConfigError(_too_deep(f"--config {key}")) from None
        except yaml.YAMLError:
            pass  # Snakemake has said so already


def validate_config(config: dict[str, Any], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return a validated deep copy of ``config`` with every default filled in."""
    schema = load_schema() if schema is None else schema
    check_depth(config)
    filled = copy.deepcopy(dict(config))
    check_finite(filled)
    raise_first_error(_FillingValidator(schema), filled)
    for name in filled["experiments"]:
        if name in GENERATED_TABLES or name.startswith("gn_"):
            raise ConfigError(
                f"config key experiments.{name}: the name is taken by a table the workflow "
                f"writes itself (results/tables/{name}.parquet): choose another"
            )
    if not (filled["experiments"] or filled["checkpoints"] or filled["gauss_newton"]["sweeps"]):
        raise ConfigError(
            "config lists nothing to run: no experiments, gauss_newton.sweeps or checkpoints"
        )
    _check_gn_sweeps(filled)
    _check_gn_experiments(filled, schema)
    return filled


def _check_gn_experiments(config: dict[str, Any], schema: dict[str, Any]) -> None:
    """A GN part on saved weights (exp7, along_training) is skipped where its experiment is
    absent: quietly for the default name (a config without that experiment), but a name the
    user set that the config does not run is refused (a misspelt name skipped the part)."""
    parts = schema["properties"]["gauss_newton"]["properties"]
    for part in ("exp7", "along_training"):
        name = config["gauss_newton"][part]["experiment"]
        default = parts[part]["properties"]["experiment"]["default"]
        if name != default and name not in config["experiments"]:
            raise ConfigError(
                f"config key gauss_newton.{part}.experiment: {name!r} is not an experiment of "
                "this config" + did_you_mean(name, sorted(config["experiments"]))
            )


def _check_gn_sweeps(config: dict[str, Any]) -> None:
    """The constraints of the GN sweeps that the schema cannot say, and the user's data files."""
    from matcond.core.gn_data import DIGITS_ROWS, load_data_file

    gauss_newton = config.get("gauss_newton", {})
    files = gauss_newton.get("data", {}).get("files", {})
    rows = {"digits": DIGITS_ROWS}
    for name, path in files.items():
        try:
            rows[name] = load_data_file(path)[0].shape[0]
        except ValueError as err:
            raise ConfigError(f"config key gauss_newton.data.files.{name}: {err}") from None
    sweeps = gauss_newton.get("sweeps", {})
    for name, sweep in sweeps.items():
        _check_sample_counts(f"config key gauss_newton.sweeps.{name}", sweep, rows)
        unknown = [d for d in sweep.get("datasets", []) if d not in ("digits", "gaussian", *files)]
        if unknown:
            raise ConfigError(
                f"config key gauss_newton.sweeps.{name}.datasets: {unknown[0]!r} is not digits, "
                "gaussian or a data set of gauss_newton.data.files"
            )
        if sweep.get("architecture") == "vit" and sweep["dim"] % sweep["heads"]:
            raise ConfigError(
                f"config key gauss_newton.sweeps.{name}.dim: {sweep['dim']} is not a multiple "
                f"of heads ({sweep['heads']})"
            )
    relu = sweeps.get("fig18_relu_training")
    if relu is None:
        return
    key = "config key gauss_newton.sweeps.fig18_relu_training"
    if len(relu["lrs"]) != len(relu["widths"]):
        raise ConfigError(
            f"{key}.lrs: {len(relu['lrs'])} learning rates for {len(relu['widths'])} widths "
            "(one per width, in the order of `widths`)"
        )
    if relu["spectrum_width"] not in relu["widths"]:
        raise ConfigError(
            f"{key}.spectrum_width: {relu['spectrum_width']} is not one of widths {relu['widths']}"
        )


def _check_sample_counts(key: str, sweep: dict[str, Any], rows: dict[str, int]) -> None:
    """A sweep asks for no more rows than its data sets have (they were cut without a word):
    ``n_samples`` of each data set with a fixed size (the digits, a file), ``train_samples``
    of the digits, ``gn_samples`` of the training rows."""
    n = sweep.get("n_samples")
    for dataset in sweep.get("datasets", []):
        if n is not None and n > rows.get(dataset, n):
            raise ConfigError(
                f"{key}.n_samples: {n} is more than the {rows[dataset]} rows of data set {dataset}"
            )
    train = sweep.get("train_samples")
    if train is not None and train > rows["digits"]:
        raise ConfigError(
            f"{key}.train_samples: {train} is more than the {rows['digits']} rows of the digits"
        )
    gn = sweep.get("gn_samples")
    if gn is not None and gn > (train or rows["digits"]):
        raise ConfigError(
            f"{key}.gn_samples: {gn} is more than the {train or rows['digits']} training rows"
        )


def results_dir_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be the results directory, seen before the DAG is built: it is
    there but not a directory, or a link that leads nowhere or in a loop; None where it is a
    directory or not there yet."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    try:
        is_dir = stat.S_ISDIR(path.stat().st_mode)
    except OSError as err:
        reason = os.strerror(err.errno) if err.errno else str(err)
        return f"the results directory {path.absolute()} cannot be reached: {reason}"
    if not is_dir:
        return f"{path.absolute()} is not a directory: move it away, and a run makes one"
    return None


def check_results_dir(path: str | Path, min_free_mb: int = 200) -> None:
    """Raise ConfigError, naming ``path``, unless a file can be written there and space is left."""
    path = Path(path)
    probe = path / ".matcond-write-test"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"ok")
        probe.unlink()
        free_mb = os.statvfs(path).f_bavail * os.statvfs(path).f_frsize // 2**20
    except OSError as err:
        reason = os.strerror(err.errno) if err.errno else str(err)
        raise ConfigError(
            f"cannot write to the results directory {path.absolute()}: {reason}"
        ) from None
    if free_mb < min_free_mb:
        reason = os.strerror(errno.ENOSPC)
        raise ConfigError(
            f"the results directory {path.absolute()} has {free_mb} MB free ({reason}); "
            f"need at least {min_free_mb} MB"
        )
