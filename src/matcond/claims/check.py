"""config/claims.yaml at parse time: its validation before any job runs (the fields:
:mod:`matcond.claims.evaluate`), whose claim each is, and the papers' values a figure marks.

Light on purpose (yaml, jsonschema; numpy only once a component name is checked): the
Snakefile calls it at parse time.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection
from typing import Any

from jsonschema import Draft202012Validator, validators

from matcond.core import config
from matcond.core.config import ConfigError, did_you_mean, raise_first_error
from matcond.gn_experiments.columns import GN_TABLE_PREFIX, SWEEP_COLUMNS

SCHEMA_PATH = config.SCHEMA_PATH.with_name("claims.schema.yaml")
CLAIMS_FILE = "config/claims.yaml"
# The derived components (the keys of matcond.core.arms.DERIVED) and the rows of the spectrum
# recorded with record_gradients (matcond.condition_number.run).
DERIVED = (
    "gradient_ratio",
    "log_kappa_autocorrelation",
    "kappa_error_without_rank_cut",
    "row_norms_falling_share",
    "condition_number_falling_share",
)
SPECTRUM = re.compile(r"(grad_)?sigma_[1-9][0-9]*")
# The depth formula's per-trial table (rule depth_theory), named in claims as an experiment.
DEPTH_TABLE = "depth_theory"
# Who makes a claim: a paper (its text, slides and review) or we (theory, controls).
PAPER, GN_PAPER, OWN = "condition-number paper", "Gauss-Newton paper", "own check"
SOURCES = (PAPER, GN_PAPER, OWN)

# YAML's .nan is a float: it is no number here.
_Validator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
        "number",
        lambda checker, x: (
            Draft202012Validator.TYPE_CHECKER.is_type(x, "number") and not math.isnan(x)
        ),
    ),
)


def figure_title(name: str) -> str:
    """Figure ``name``'s paper name ("GN Fig. 10: linear training") or, for an extension,
    its own name."""
    if match := re.fullmatch(r"(gn_)?fig(\d+)_(.*)", name):
        paper = f"{'GN ' if match.group(1) else ''}Fig. {match.group(2)}"
        return f"{paper}: {match.group(3).replace('_', ' ')}"
    if match := re.fullmatch(r"gn_app(\w)_(.*)", name):
        return f"GN App. {match.group(1)}: {match.group(2).replace('_', ' ')}"
    return name


def claim_source(claim: dict) -> str:
    """:data:`OWN` for our theory's predictions and our controls; else :data:`GN_PAPER` for a
    claim on a GN sweep's table, :data:`PAPER` otherwise."""
    if claim["paper_value"] == "theory" or claim["where"].startswith(("control", "theory")):
        return OWN
    return GN_PAPER if claim["table"].startswith(GN_TABLE_PREFIX) else PAPER


def _mark_label(claim: dict) -> str:
    """Where a paper's value comes from, as a figure's legend names it."""
    if claim_source(claim) == GN_PAPER:
        return "GN paper"
    for start in ("peer review", "slides"):
        if claim["where"].startswith(start):
            return start
    return "paper"


def heavy_tail_setting(claims: dict, claim: dict) -> tuple[str | None, int | None]:
    """The heavy-tail rule's pool (an experiment) for ``claim`` and the paper's number of
    trials, from the ``heavy_tail`` section of config/claims.yaml (a claim's ``paper_n``
    overrides its experiment's)."""
    entry = claims.get("heavy_tail", {}).get(claim["table"], {})
    return entry.get("pool"), claim.get("paper_n", entry.get("paper_n"))


def paper_values(claims: dict, tables: Collection[str]) -> list[dict]:
    """The papers' values that a figure drawn from ``tables`` marks: one dict per value claim
    of a paper (not our checks) on one of those tables that is judged on a mean or median and
    gives a finite value or range. Keys: ``table``, ``source`` (paper, slides, peer review, GN
    paper), ``low`` and ``high`` (equal for a single value), ``field`` (what is read: ``error``
    unless the claim says otherwise) and the claim's filter, with the defaults of
    :func:`matcond.core.arms.arm` made explicit (the product matrix; no epoch is the last);
    for a mean on a per-trial table whose paper's number of trials is known, ``claim`` (the
    claim itself), ``pool`` and ``paper_n`` (:func:`heavy_tail_setting`), from which the plot
    job draws where a mean of that many of our trials falls.
    """
    marks = []
    for claim in claims["claims"]:
        value = claim["paper_value"]
        low, high = value if isinstance(value, list) else (value, value)
        if (
            claim["table"] not in tables
            or claim_source(claim) == OWN
            or claim.get("kind", "value") != "value"
            or claim.get("statistic", "mean") not in ("mean", "median")
            or not all(math.isfinite(v) for v in (low, high))
        ):
            continue
        gn = claim["table"].startswith(GN_TABLE_PREFIX)
        where = dict(claim.get("filter", {})) if gn else {"matrix": "product", **claim["filter"]}
        where.setdefault("field", None if gn else "error")
        mark = {"table": claim["table"], "source": _mark_label(claim), "low": low, "high": high}
        pool, paper_n = heavy_tail_setting(claims, claim)
        if not gn and claim.get("statistic", "mean") == "mean" and paper_n:
            mark |= {"claim": claim, "pool": pool or claim["table"], "paper_n": paper_n}
        marks.append(mark | where)
    return marks


def load_schema() -> dict[str, Any]:
    """The claims schema with the trial settings of the config schema added.

    List-valued settings are left out: they are no columns of a per-trial table.
    """
    schema = config.load_schema(SCHEMA_PATH)
    settings = config.load_schema()["$defs"]["settings"]["properties"]
    settings = {k: v for k, v in settings.items() if v.get("type") != "array"}
    defs = schema["$defs"]
    defs["setting"]["enum"] = list(settings)
    defs["where"]["properties"].update(settings)
    defs["over"]["properties"] = {
        k: {"type": "array", "minItems": 1, "items": v}
        for k, v in defs["where"]["properties"].items()
    }
    return schema


def _check_component(name: str, prefix: str) -> None:
    """Raise ConfigError unless a per-trial table can hold component ``name``."""
    from matcond.condition_number.components import (
        component_names,  # numpy: the Snakefile has loaded it
    )

    if name in DERIVED or SPECTRUM.fullmatch(name):
        return
    try:  # effective_rank_t{t}: named as matcond.condition_number.components names it
        thresholds = [float(name.removeprefix("effective_rank_t"))]
    except ValueError:
        thresholds = []
    names = component_names([t for t in thresholds if 0 < t < 1])
    if name in names:
        return
    settings = config.load_schema()["$defs"]["settings"]["properties"]
    thresholds = settings["effective_rank_thresholds"]["default"]
    known = [*component_names(thresholds), *DERIVED, "sigma_1", "grad_sigma_1"]
    rank = [n for n in names if n.startswith("effective_rank_t")]  # as the tables write it
    raise ConfigError(f"{prefix}{name!r} is not a component{did_you_mean(name, rank or known)}")


def _check_table(name: str, experiments: Collection[str], prefix: str) -> None:
    if name not in experiments and name != DEPTH_TABLE:
        raise ConfigError(
            f"{prefix}{name!r} is not an experiment (or gn_ GN sweep) of the paper config or "
            f"of this config, nor {DEPTH_TABLE!r}"
            + did_you_mean(name, sorted([*experiments, DEPTH_TABLE]))
        )


def _check_unique(names: list, what: str, prefix: str) -> None:
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"{prefix}{what} {repeated[0]!r} is given twice")


def _check_gn_claim(claim: dict, prefix: str) -> None:
    """The columns a claim on a GN sweep's table names are the sweep's."""
    columns = SWEEP_COLUMNS[claim["table"].removeprefix(GN_TABLE_PREFIX)]
    named = [
        (f"{k}.{c}", c)
        for k in ("filter", "baseline", "over")
        for c in claim.get(k, {})
        if c != "field"
    ]
    named += [
        (f"{k}.field", name)
        for k in ("filter", "baseline")
        if k in claim
        for name in claim[k]["field"].removesuffix("_upper").split("/", 1)
    ]
    for field, name in named:
        if name not in columns:
            raise ConfigError(
                f"{prefix}{field}: {name!r} is not a column of {claim['table']}"
                + did_you_mean(name, columns)
            )
    for k in ("filter", "baseline"):
        field = claim.get(k, {}).get("field", "")
        if field.endswith("_upper") and ("/" in field or not field.startswith("tightness")):
            raise ConfigError(f"{prefix}{k}.field: only a tightness column has an _upper")


def _check_claim(claim: dict, experiments: Collection[str], prefix: str) -> None:
    """What the schema cannot say about one (schema-valid) claim."""
    _check_table(claim["table"], experiments, f"{prefix}table: ")
    if claim["table"].startswith(GN_TABLE_PREFIX):
        _check_gn_claim(claim, prefix)
        return
    named = [
        (f"{k}.component", claim[k]["component"])
        for k in ("filter", "baseline")
        if "component" in claim.get(k, {})
    ]
    named += [("components", c) for c in claim.get("components", [])]
    named += [("over.component", c) for c in claim.get("over", {}).get("component", [])]
    for field, name in named:
        _check_component(name, f"{prefix}{field}: ")
    if "components" in claim and claim.get("kind") != "improvement_gap":
        raise ConfigError(f"{prefix}components: only kind improvement_gap reads them")
    paper = claim["paper_value"]
    if isinstance(paper, list) and not paper[0] <= paper[1]:
        raise ConfigError(f"{prefix}paper_value: {paper} is not a range [low, high]")


def validate_claims(claims: Any, experiments: Collection[str], file: str = CLAIMS_FILE) -> None:
    """Raise ConfigError, naming ``file``, the claim and the field, unless ``claims`` (the
    parsed claims file) is valid and its tables are among ``experiments`` (the experiments of
    the paper config and of the current config, and ``gn_{sweep}`` for their GN sweeps) or
    :data:`DEPTH_TABLE`."""
    schema = load_schema()
    whole = _Validator(schema)
    entries = claims.get("claims") if isinstance(claims, dict) else None
    if not isinstance(entries, list):
        raise_first_error(whole, claims, f"{file}: ")  # raises: no list of claims
    one = _Validator({"$defs": schema["$defs"], **schema["$defs"]["claim"]})
    for number, claim in enumerate(entries, 1):
        name = claim.get("claim_id") if isinstance(claim, dict) else None
        prefix = f"{file}: claim {name or f'#{number}'}: "
        raise_first_error(one, claim, prefix)
        _check_claim(claim, experiments, prefix)
    raise_first_error(whole, {**claims, "claims": []}, f"{file}: ")  # the rest, claims done
    _check_unique([c["claim_id"] for c in entries], "claim_id", f"{file}: ")
    readings = claims.get("readings", [])
    _check_unique([r["name"] for r in readings], "reading", f"{file}: ")
    for reading in readings:
        prefix = f"{file}: reading {reading['name']}: "
        _check_table(reading["experiment"], experiments, f"{prefix}experiment: ")
        for table, where in reading["stands_for"].items():
            _check_table(table, experiments, f"{prefix}stands_for: ")
            if "component" in where:
                _check_component(where["component"], f"{prefix}stands_for.{table}.component: ")
    arms_by = {key for reading in readings for key in reading["arms_by"]}
    for key in claims.get("sensitivity", {}):
        if key not in arms_by:
            raise ConfigError(
                f"{file}: sensitivity: {key!r} is no reading's arms_by setting"
                + did_you_mean(key, sorted(arms_by))
            )
    ids = [c["claim_id"] for c in entries]
    calibration = claims.get("calibration", {})
    for name in [*calibration.get("facts", []), *filter(None, [calibration.get("kappa")])]:
        if name not in ids:
            raise ConfigError(f"{file}: calibration: no claim {name!r}" + did_you_mean(name, ids))
    for number, finding in enumerate(claims.get("findings", []), 1):
        for name in finding["claims"]:
            if name not in ids:
                raise ConfigError(
                    f"{file}: finding #{number}: no claim {name!r}" + did_you_mean(name, ids)
                )
    for table, entry in claims.get("heavy_tail", {}).items():
        prefix = f"{file}: heavy_tail: {table}: "
        _check_table(table, experiments, prefix)
        if "pool" in entry:
            _check_table(entry["pool"], experiments, f"{prefix}pool: ")


def check_setting_columns(
    claims: dict,
    settings: dict[str, list[dict]],
    swept: dict[str, Collection[str]],
    file: str = CLAIMS_FILE,
) -> None:
    """Raise ConfigError, naming the claim and the field, where a claim selects on a trial
    setting that its experiment's tables have no column for: one it does not vary (``swept``:
    per experiment :func:`matcond.core.trials.swept_settings`) and whose trials keep it at
    its neutral value, so none stores it (``settings``: :func:`table_settings`). Such a claim
    would find no rows after the whole run ("not comparable")."""
    names = set(load_schema()["$defs"]["setting"]["enum"])
    for claim in claims["claims"]:
        table = claim["table"]
        if table not in swept:
            continue
        for arm in ("filter", "baseline", "over"):
            for key in claim.get(arm, {}):
                if key in names and key not in swept[table]:
                    if not any(key in spec for spec in settings[table]):
                        raise ConfigError(
                            f"{file}: claim {claim['claim_id']}: {arm}.{key}: the trials of "
                            f"experiments.{table} keep {key} at its neutral value and do not "
                            f"store it, so its tables have no {key} column: leave it out"
                        )


def pool_mismatches(heavy_tail: dict, settings: dict[str, list[dict]]) -> list[str]:
    """The heavy-tail pools (config/claims.yaml's ``heavy_tail``) whose experiment lacks a
    setting of the experiment it pools for, both in this run (``settings``:
    :func:`table_settings`), as "heavy_tail: table: pool X lacks the setting {...}"; a pool
    with other settings would be drawn from other trials than the claims'."""
    problems = []
    for table, entry in heavy_tail.items():
        pool = entry.get("pool")
        if pool is None or table not in settings or pool not in settings:
            continue
        held = {_canonical(s) for s in settings[pool]}
        for spec in settings[table]:
            if _canonical(spec) not in held:
                problems.append(f"heavy_tail: {table}: pool {pool} lacks the setting {spec}")
                break
    return problems


def table_settings(cells: dict[str, list[dict]], sweeps: dict[str, dict]) -> dict[str, list[dict]]:
    """The settings behind each table a claim can read: per experiment of ``cells``
    (:func:`matcond.core.trials.config_cells`) one spec per setting, without its seed; per
    GN sweep of ``sweeps`` (config key ``gauss_newton.sweeps``) its settings without the
    number of seeds. The number of seeds is no setting: it changes the interval, not what is
    measured."""
    settings = {
        name: [{k: v for k, v in cell.items() if k != "seed"} for cell in specs]
        for name, specs in cells.items()
    }
    for name, sweep in sweeps.items():
        settings[GN_TABLE_PREFIX + name] = [{k: v for k, v in sweep.items() if k != "seeds"}]
    return settings


def settings_differences(
    run: dict[str, list[dict]], paper: dict[str, list[dict]], tables: Collection[str]
) -> dict[str, str]:
    """For each of ``tables`` that both ``run`` and ``paper`` (:func:`table_settings` of this
    run's config and of the paper config) hold with different settings: what differs, as
    "key: this run's values (paper config: its values)", at most three keys."""
    differences = {}
    for table in sorted(set(tables) & set(run) & set(paper)):
        ours, theirs = run[table], paper[table]
        if sorted(map(_canonical, ours)) == sorted(map(_canonical, theirs)):
            continue
        keys = sorted({k for s in [*ours, *theirs] for k in s})
        words = []
        for key in keys:
            mine, its = _values(ours, key), _values(theirs, key)
            if mine != its:
                words.append(f"{key}: {', '.join(mine)} (paper config: {', '.join(its)})")
        if not words:  # the same values, combined otherwise
            words = ["the settings are combined otherwise than in the paper config"]
        differences[table] = "; ".join(words[:3]) + ("; …" if len(words) > 3 else "")
    return differences


def _canonical(settings: dict) -> str:
    return json.dumps(settings, sort_keys=True)


def _values(settings: list[dict], key: str) -> list[str]:
    """The values ``key`` takes in ``settings`` as JSON, numbers in numeric order."""
    texts = {json.dumps(s.get(key), sort_keys=True) for s in settings}

    def order(text: str) -> tuple:
        try:
            return (0, float(text), "")
        except ValueError:
            return (1, 0.0, text)

    return sorted(texts, key=order)
