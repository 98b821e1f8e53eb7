# Gauss-Newton conditioning (second paper): the bounds on exp7's saved weights (one job per
# trial, then one table) and the paper's experiments at initialisation (one job per sweep, one
# table each). Settings: the config's `gauss_newton` block (schema); tables:
# src/matcond/gn_experiments; figures: the `plot` rule (matcond.catalog). Every job runs on the
# CPU in float64 with one thread: its largest eigenproblem is 4096 x 4096 at paper scale.
import json

GN_EXP7_SETTINGS = json.dumps(
    {k: v for k, v in GN["exp7"].items() if k not in ("experiment", "models")},
    sort_keys=True,
)
GN_SWEEP_SETTINGS = {
    name: json.dumps({"sweep": sweep, "data": GN["data"]}, sort_keys=True)
    for name, sweep in GN["sweeps"].items()
}


rule gn_exp7_trial:
    """Exact GN condition number and its bounds for one exp7 trial's saved weights."""
    input:
        weights="results/trials/{trial}.safetensors",
    output:
        "results/gn/{trial}.parquet",
    log:
        "results/logs/gn/{trial}.log",
    benchmark:
        "results/benchmarks/gn/{trial}.tsv"
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        gpu=0,
        # dense GN forms of side dim^2 (a few float64 copies) plus torch
        mem_mb=lambda wildcards: 1500
        + 40 * TRIAL_BY_PATH[wildcards.trial].spec["dim"] ** 4 // 1_000_000,
        runtime=30,
    params:
        spec=trial_spec,
        settings=GN_EXP7_SETTINGS,
        code=code_fingerprint("gn_exp7_trial.py"),
    script:
        "../../scripts/gn_exp7_trial.py"


rule gn_exp7_table:
    """Statistics of exact kappa and bound tightness over the exp7 trials."""
    input:
        [f"results/gn/{t.path}.parquet" for t in GN_EXP7_TRIALS],
    output:
        parquet="results/tables/gn_exp7.parquet",
        csv="results/tables/gn_exp7.csv",
    log:
        "results/logs/gn/exp7_table.log",
    benchmark:
        "results/benchmarks/gn/exp7_table.tsv"
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        experiment=GN["exp7"]["experiment"],
        code=code_fingerprint("gn_exp7_table.py"),
    script:
        "../../scripts/gn_exp7_table.py"


rule gn_sweep:
    """One GN-paper experiment at initialisation (all its seeds) -> one table."""
    output:
        parquet="results/tables/gn_{sweep}.parquet",
        csv="results/tables/gn_{sweep}.csv",
    log:
        "results/logs/gn/{sweep}.log",
    benchmark:
        "results/benchmarks/gn/{sweep}.tsv"
    wildcard_constraints:
        sweep="|".join(GN["sweeps"]) or "(?!)",
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        gpu=0,
        mem_mb=4000,
        runtime=30,
    params:
        settings=lambda wildcards: GN_SWEEP_SETTINGS[wildcards.sweep],
        code=code_fingerprint("gn_sweep.py"),
    script:
        "../../scripts/gn_sweep.py"
