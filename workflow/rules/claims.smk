# The claims of config/claims.yaml, validated in the main process before any job (names the
# offending claim), and the start-up notes on what this config leaves out.
from matcond.claims.check import (
    DEPTH_TABLE,
    check_setting_columns,
    pool_mismatches,
    validate_claims,
)
from matcond.figures.captions import config_notes
from matcond.gn_experiments.columns import GN_TABLE_PREFIX
from matcond.core.console import note

if workflow.is_main_process:
    try:
        _claims = claims_yaml()
        _paper = CONFIG_FILES.get(PAPER_CONFIG.resolve()) or load_yaml(PAPER_CONFIG)
        _sweeps = {*_paper.get("gauss_newton", {}).get("sweeps", {}), *GN["sweeps"]}
        validate_claims(
            _claims,
            {
                *_paper["experiments"],
                *TRIALS,
                *(f"{GN_TABLE_PREFIX}{s}" for s in _sweeps),
            },
            CLAIMS_FILE,
        )
        check_setting_columns(
            _claims,
            table_settings(CELLS, {}),
            {e: swept_settings(x) for e, x in config["experiments"].items()},
            CLAIMS_FILE,
        )
    except ConfigError as err:
        sys.exit(f"Invalid claims: {err}")
    for _problem in pool_mismatches(
        _claims.get("heavy_tail", {}), table_settings(CELLS, {})
    ):
        note(f"{_problem}: its claims there draw from their own trials")
    for _note in config_notes(
        [*TRIALS, *([DEPTH_TABLE] if PLAN.depth_trials else [])],
        PLAN.gn_parts,
        [c["table"] for c in _claims["claims"]],
        [
            *(r["experiment"] for r in _claims.get("readings", [])),
            *(e["pool"] for e in _claims.get("heavy_tail", {}).values() if "pool" in e),
            *config["theory"]["experiments"],
            *config["depth_theory"]["experiments"],
            *(GN[p]["experiment"] for p in PLAN.gn_trials),
        ],
    ):
        note(_note)


rule claims:
    """Check every quantitative claim of config/claims.yaml against the per-trial tables and
    the GN sweeps' tables (a bootstrap interval and a verdict per claim), and again under
    each reading of the paper's ambiguous settings."""
    input:
        claims=CLAIMS_FILE,
        tables=PLAN.claims_tables(),
        gn_tables=PLAN.gn_sweep_tables(),
    output:
        csv=CLAIMS_TABLE,
        parquet="results/claims.parquet",
        html=report(
            "results/claims.html", caption="../report/claims.rst", category="Claims"
        ),
        scorecard="results/scorecard.html",
        md="results/claims.md",
        summary="results/summary.md",
        readings="results/tables/readings.parquet",
        readings_csv="results/tables/readings.csv",
        readings_md="results/readings.md",
        calibration="results/tables/calibration.csv",
    log:
        "results/logs/claims.log",
    benchmark:
        "results/benchmarks/claims.tsv"
    conda:
        "../../envs/matcond.yaml"
    # its claims are evaluated side by side (matcond.execution.forked): it ends the run;
    # a local run gives it at most --cores
    threads: 4
    resources:
        gpu=0,
        mem_mb=4000,
        runtime=20,
    params:
        **rule_params(
            "claims",
            settings_differ=lambda wildcards: claims_settings_differ(),
            figures=json.dumps(claim_figures(), sort_keys=True),
        ),
    shell:
        JOB
