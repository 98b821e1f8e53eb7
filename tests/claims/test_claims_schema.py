"""config/claims.yaml against its schema (src/matcond/schemas/claims.schema.yaml) and the checks
of matcond.claims.check: each mistake is refused, naming the claim and the field."""

import copy
import math
import subprocess
import sys

import pytest
import torch
from support import REPO

from matcond.claims.check import DERIVED, load_schema, validate_claims
from matcond.claims.measure import DEFAULT_THRESHOLD, REDUCE
from matcond.condition_number.run import RESULT_COLUMNS, run_trial
from matcond.condition_number.theory import PREDICTED
from matcond.core.arms import DERIVED as SELECTION_DERIVED
from matcond.core.config import ConfigError, load_yaml
from matcond.stats.summary import STATISTICS

CLAIMS = load_yaml(REPO / "config" / "claims.yaml")
_PAPER_CONFIG = load_yaml(REPO / "config" / "config.yaml")
# the paper config's experiments and GN sweeps' tables: what claims may name
PAPER = {
    *_PAPER_CONFIG["experiments"],
    *(f"gn_{s}" for s in _PAPER_CONFIG["gauss_newton"]["sweeps"]),
}
FILE = "config/claims.yaml"


def by_id(claims: dict, claim_id: str) -> dict:
    return next(c for c in claims["claims"] if c["claim_id"] == claim_id)


def refusal(mutate) -> str:
    claims = copy.deepcopy(CLAIMS)
    mutate(claims)
    with pytest.raises(ConfigError) as err:
        validate_claims(claims, PAPER, FILE)
    return str(err.value)


def test_the_paper_claims_file_is_valid():
    validate_claims(CLAIMS, PAPER, FILE)


def test_a_table_of_this_config_only_is_known():
    claims = copy.deepcopy(CLAIMS)
    by_id(claims, "exp1_kappa_d32")["table"] = "mine"
    validate_claims(claims, {*PAPER, "mine"}, FILE)
    with pytest.raises(ConfigError, match="claim exp1_kappa_d32: table: 'mine'"):
        validate_claims(claims, PAPER, FILE)


def setter(claim_id, *path, value):
    def mutate(claims):
        target = by_id(claims, claim_id)
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


# (mutation, the start of the message, what else it says)
MISTAKES = {
    "kind misspelt": (
        setter("exp1_norms_flat", "kind", value="ratoi"),
        "claim exp1_norms_flat: kind: 'ratoi' is not one of",
        "(did you mean 'ratio'?)",
    ),
    "expect misspelt": (
        setter("exp1_kappa_d512", "expect", value="grater"),
        "claim exp1_kappa_d512: expect: 'grater' is not one of",
        "(did you mean 'greater'?)",
    ),
    "statistic misspelt": (
        setter("exp1_kappa_d32_std", "statistic", value="meadian"),
        "claim exp1_kappa_d32_std: statistic: 'meadian' is not one of",
        "(did you mean 'median'?)",
    ),
    "reduce misspelt": (
        setter("exp8_kappa_exceeds_norms", "reduce", value="minimum"),
        "claim exp8_kappa_exceeds_norms: reduce: 'minimum' is not one of",
        "allowed: min, max",
    ),
    "field misspelt": (
        setter("exp7_target_kappa", "filter", "field", value="targets"),
        "claim exp7_target_kappa: filter.field: 'targets' is not one of",
        "(did you mean 'target'?)",
    ),
    "unknown field of a claim": (
        setter("exp1_kappa_d32", "statistc", value="mean"),
        "claim exp1_kappa_d32: (top level): Additional properties are not allowed",
        "'statistc' was unexpected) (did you mean 'statistic'?)",
    ),
    "a claim's own tolerance (one band rule for all)": (
        setter("exp1_norms_flat", "tolerance", value=0.05),
        "claim exp1_norms_flat: (top level): Additional properties are not allowed",
        "'tolerance' was unexpected",
    ),
    "table misspelt": (
        setter("exp1_kappa_d32", "table", value="exp1_dimensoin"),
        "claim exp1_kappa_d32: table: 'exp1_dimensoin' is not an experiment",
        "(did you mean 'exp1_dimension'?)",
    ),
    "component misspelt in filter": (
        setter("exp1_kappa_d32", "filter", "component", value="conditon_number"),
        "claim exp1_kappa_d32: filter.component: 'conditon_number' is not a component",
        "(did you mean 'condition_number'?)",
    ),
    "component misspelt in baseline": (
        setter("exp9_ratio_1000", "baseline", "component", value="row_norm"),
        "claim exp9_ratio_1000: baseline.component: 'row_norm' is not a component",
        "(did you mean 'row_norms'?)",
    ),
    "component misspelt in components": (
        setter("exp6_kappa_below_norms", "components", value=["pseudo_condition_number", "rows"]),
        "claim exp6_kappa_below_norms: components: 'rows' is not a component",
        "",
    ),
    "component misspelt in over": (
        setter("exp2_adam_worse_everywhere", "over", "component", value=["row_norms", "overal"]),
        "claim exp2_adam_worse_everywhere: over.component: 'overal' is not a component",
        "(did you mean 'overall'?)",
    ),
    "effective rank at a threshold written otherwise than in the tables": (
        setter("exp1_effective_rank_d128", "filter", "component", value="effective_rank_t1e-2"),
        "claim exp1_effective_rank_d128: filter.component: 'effective_rank_t1e-2' is not a",
        "",
    ),
    "unknown filter key": (
        setter("exp1_kappa_d32", "filter", "dimm", value=32),
        "claim exp1_kappa_d32: filter: Additional properties are not allowed",
        "'dimm' was unexpected) (did you mean 'dim'?)",
    ),
    "a list setting is no column": (
        setter("exp1_kappa_d32", "filter", "effective_rank_thresholds", value=[0.01]),
        "claim exp1_kappa_d32: filter: Additional properties are not allowed",
        "'effective_rank_thresholds' was unexpected",
    ),
    "unknown over key": (
        setter("exp8_kappa_exceeds_norms", "over", value={"learning_rate": [0.01]}),
        "claim exp8_kappa_exceeds_norms: over: Additional properties are not allowed",
        "'learning_rate' was unexpected",
    ),
    "setting value misspelt": (
        setter("exp4_multipliers_norms", "filter", "strategy", value="multiplers"),
        "claim exp4_multipliers_norms: filter.strategy: 'multiplers' is not one of",
        "(did you mean 'multipliers'?)",
    ),
    "setting value a string": (
        setter("exp8_wd_kappa_1e-4", "filter", "weight_decay", value="1e-4"),
        "claim exp8_wd_kappa_1e-4: filter.weight_decay: '1e-4' is not of type 'number'",
        "write 1.0e-3",
    ),
    "over value of the wrong type": (
        setter("exp8_kappa_exceeds_norms", "over", "lr", value=[0.01, "fast"]),
        "claim exp8_kappa_exceeds_norms: over.lr.1: 'fast' is not of type 'number'",
        "",
    ),
    "duplicate claim_id": (
        setter("exp1_kappa_d512", "claim_id", value="exp1_kappa_d32"),
        "claim_id 'exp1_kappa_d32' is given twice",
        "",
    ),
    "paper_value a string": (
        setter("exp1_kappa_d32", "paper_value", value="0.27"),
        "claim exp1_kappa_d32: paper_value: '0.27' is not valid under any",
        "",
    ),
    "paper_value a range of three": (
        setter("exp1_spectral_gap_d128", "paper_value", value=[0.03, 0.1, 0.13]),
        "claim exp1_spectral_gap_d128: paper_value:",
        "",
    ),
    "paper_value infinite": (
        setter("exp1_kappa_d32", "paper_value", value=math.inf),
        "claim exp1_kappa_d32: paper_value: inf is not valid under any",
        "",
    ),
    "paper_value a range high to low": (
        setter("exp1_spectral_gap_d128", "paper_value", value=[0.13, 0.03]),
        "claim exp1_spectral_gap_d128: paper_value: [0.13, 0.03] is not a range",
        "",
    ),
    "a ratio without baseline": (
        lambda claims: by_id(claims, "exp1_norms_flat").pop("baseline"),
        "claim exp1_norms_flat: (top level): 'baseline' is a required property",
        "",
    ),
    "an arm without component": (
        lambda claims: by_id(claims, "exp9_ratio_1000")["baseline"].pop("component"),
        "claim exp9_ratio_1000: baseline: 'component' is a required property",
        "",
    ),
    "components with a kind that ignores them": (
        setter("exp1_norms_flat", "components", value=["row_norms", "col_norms"]),
        "claim exp1_norms_flat: components: only kind improvement_gap reads them",
        "",
    ),
    "reduce without over": (
        setter("exp1_norms_flat", "reduce", value="max"),
        "claim exp1_norms_flat: (top level): 'over' is a dependency of 'reduce'",
        "",
    ),
    "a theory the theory does not make": (
        setter("theory_kappa_d1024", "filter", "component", value="spectral_gap"),
        "claim theory_kappa_d1024: filter.component: 'spectral_gap' is not one of",
        "",
    ),
    "default_tolerance NaN": (
        lambda claims: claims.update(default_tolerance=math.nan),
        "default_tolerance: nan is not of type 'number'",
        "",
    ),
    "unknown top-level key": (
        lambda claims: claims.update(reading=[]),
        "(top level): Additional properties are not allowed",
        "(did you mean 'readings'?)",
    ),
    "a GN claim on a column its sweep has not": (
        setter("gn_width_improves", "filter", "widht", value=512),
        "claim gn_width_improves: filter.widht: 'widht' is not a column of gn_fig2_depth",
        "(did you mean 'width'?)",
    ),
    "a GN claim reading a column its sweep has not": (
        setter("gn_width_improves", "baseline", "field", value="kapa"),
        "claim gn_width_improves: baseline.field: 'kapa' is not a column of gn_fig2_depth",
        "(did you mean 'kappa'?)",
    ),
    "a GN claim dividing by a column its sweep has not": (
        setter("gn_width_improves", "baseline", "field", value="kappa/kapa_sigma"),
        "claim gn_width_improves: baseline.field: 'kapa_sigma' is not a column of gn_fig2_depth",
        "(did you mean 'kappa_sigma'?)",
    ),
    "a GN claim without its field": (
        lambda claims: by_id(claims, "gn_width_improves")["filter"].pop("field"),
        "claim gn_width_improves: filter: 'field' is a required property",
        "",
    ),
    "an _upper of a column that is no tightness": (
        setter("gn_width_improves", "filter", "field", value="kappa_upper"),
        "claim gn_width_improves: filter.field: only a tightness column has an _upper",
        "",
    ),
    "a GN sweep not configured": (
        setter("gn_width_improves", "table", value="gn_fig2_deep"),
        "claim gn_width_improves: table: 'gn_fig2_deep' is not an experiment",
        "(did you mean 'gn_fig2_depth'?)",
    ),
    "a component on a GN table": (
        setter("gn_width_improves", "filter", "component", value="condition_number"),
        "claim gn_width_improves: filter.component: 'component' is not a column",
        "",
    ),
    "reading experiment misspelt": (
        lambda claims: claims["readings"][0].update(experiment="ctrl_readigns"),
        "reading init and row scale: experiment: 'ctrl_readigns' is not an experiment",
        "(did you mean 'ctrl_readings'?)",
    ),
    "reading arm setting misspelt": (
        lambda claims: claims["readings"][0].update(arms_by=["init", "init_scael"]),
        "readings.0.arms_by.1: 'init_scael' is not one of",
        "(did you mean 'init_scale'?)",
    ),
    "reading stands for an unknown experiment": (
        lambda claims: claims["readings"][1]["stands_for"].update(exp2_optimiser={}),
        "reading init and row scale, 1000 epochs: stands_for: 'exp2_optimiser' is not an "
        "experiment",
        "(did you mean 'exp2_optimizer'?)",
    ),
    "a heavy-tail pool misspelt": (
        lambda claims: claims["heavy_tail"]["exp1_dimension"].update(pool="pool_exp1_dim"),
        "heavy_tail: exp1_dimension: pool: 'pool_exp1_dim' is not an experiment",
        "(did you mean 'pool_exp1_dimension'?)",
    ),
    "a paper's number of trials too large to draw": (
        lambda claims: claims["heavy_tail"]["exp1_dimension"].update(paper_n=10**9),
        "heavy_tail.exp1_dimension.paper_n: 1000000000 is greater than the maximum of 1000",
        "",
    ),
    "a heavy-tail entry without the paper's number of trials": (
        lambda claims: claims["heavy_tail"]["exp1_dimension"].pop("paper_n"),
        "heavy_tail.exp1_dimension: 'paper_n' is a required property",
        "",
    ),
    "a sensitivity setting no reading has": (
        lambda claims: claims["sensitivity"].update(init_scael=[0.02]),
        "sensitivity: 'init_scael' is no reading's arms_by setting",
        "(did you mean 'init_scale'?)",
    ),
    "a calibration claim misspelt": (
        lambda claims: claims["calibration"].update(kappa="exp1_kapa_d32"),
        "calibration: no claim 'exp1_kapa_d32'",
        "(did you mean 'exp1_kappa_d32'?)",
    ),
    "a finding's claim misspelt": (
        lambda claims: claims["findings"][1]["claims"].append("exp1_kappa_d521"),
        "finding #2: no claim 'exp1_kappa_d521'",
        "(did you mean 'exp1_kappa_d512'?)",
    ),
    "a finding without claims": (
        lambda claims: claims["findings"][0].update(claims=[]),
        "findings.0.claims: [] should be non-empty",
        "",
    ),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_each_mistake_is_refused_naming_the_claim_and_the_field(mistake):
    mutate, start, detail = MISTAKES[mistake]
    message = refusal(mutate)
    assert message.startswith(f"{FILE}: {start}")
    assert detail in message


def test_the_enumerations_are_the_codes():
    defs = load_schema()["$defs"]
    claim = defs["claim"]["properties"]
    theory = defs["claim"]["allOf"][-1]["then"]["properties"]["filter"]
    assert claim["kind"]["enum"] == ["value", *DEFAULT_THRESHOLD]
    assert claim["statistic"]["enum"] == list(STATISTICS)
    assert claim["reduce"]["enum"] == list(REDUCE)
    assert set(defs["field"]["enum"]) <= set(RESULT_COLUMNS)
    assert DERIVED == tuple(SELECTION_DERIVED)
    assert theory["properties"]["component"]["enum"] == list(PREDICTED)


def test_every_component_a_trial_records_is_known(spec):
    table, _ = run_trial(
        {**spec, "dim": 4, "epochs": 2, "record_gradients": True}, torch.device("cpu")
    )
    names = [*table["component"].unique(), *SELECTION_DERIVED]
    assert {"sigma_4", "grad_sigma_1", "effective_rank_t0.01"} <= set(names)
    claims = copy.deepcopy(CLAIMS)
    template = by_id(claims, "exp1_kappa_d32")
    del claims["calibration"], claims["findings"]  # they name claims this list does not hold
    claims["claims"] = [
        {**template, "claim_id": f"c{i}", "filter": {"component": name}}
        for i, name in enumerate(names)
    ]
    validate_claims(claims, PAPER, FILE)


def test_the_check_imports_nothing_heavy():
    """The Snakefile calls it at parse time."""
    code = (
        "import sys, matcond.claims.check; "
        "print([m for m in ('numpy', 'pandas', 'scipy', 'torch') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_setting_no_table_stores_is_refused_before_the_run():
    """A claim selecting on a setting its experiment does not vary and keeps at the neutral
    value has no column to select on: refused at parse time, not "not comparable" after the
    run (as the momentum checks' first claims were, selecting nesterov: false)."""
    from matcond.claims.check import check_setting_columns, table_settings
    from matcond.core.config import validate_config
    from matcond.core.trials import config_cells, swept_settings

    config = validate_config(
        {
            "experiments": {
                "plain": {"grid": {"dim": [4, 8]}, "seeds": 1},
                "heavy": {"settings": {"momentum": 0.9}, "grid": {"dim": [4]}, "seeds": 1},
            }
        }
    )
    settings = table_settings(config_cells(config), {})
    swept = {e: swept_settings(x) for e, x in config["experiments"].items()}

    def claims(table, where):
        arm = {"component": "condition_number", **where}
        return {"claims": [{"claim_id": "c", "table": table, "filter": arm}]}

    check_setting_columns(claims("plain", {"dim": 4}), settings, swept)  # varied: a column
    check_setting_columns(claims("heavy", {"momentum": 0.9}), settings, swept)  # stored
    for table, where in [("plain", {"momentum": 0.0}), ("heavy", {"nesterov": False})]:
        with pytest.raises(ConfigError, match=f"claim c: filter.{next(iter(where))}: the trials"):
            check_setting_columns(claims(table, where), settings, swept)
