# Gauss-Newton conditioning (second paper): the bounds on saved weights (exp7 at init and
# after training, along_training at every recorded epoch; one job per trial, then one table
# per part) and the paper's sweeps (one job per sweep, one table each). Settings: the config's
# `gauss_newton` block (schema; per part: matcond.pipeline.plan.Plan.gn_trial_settings and
# gn_sweep_settings); tables: src/matcond/gn_experiments; figures: the `plot` rule
# (matcond.figures.catalog). Every job runs on the CPU in float64 with one thread: its largest
# eigenproblem is 4096 x 4096 at paper scale.


rule gn_trial:
    """Exact GN condition number and its bounds for one trial's saved weights at the stages
    of GN part `part` (exp7: initial and final; along_training: every recorded epoch).
    """
    input:
        manifest=trial_manifest,
    output:
        "results/gn/{part}/{trial}.parquet",
    log:
        "results/logs/gn/{part}/{trial}.log",
    benchmark:
        "results/benchmarks/gn/{part}/{trial}.tsv"
    wildcard_constraints:
        part="|".join(PLAN.gn_trial_stages),
    priority: 1  # seconds each (dense depth-3 forms): before the remaining trainings
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        gpu=0,
        # dense GN forms of side dim^2 (a few float64 copies) plus torch
        mem_mb=lambda wildcards: gn_mem_mb(
            PLAN.trial_by_path[wildcards.trial].spec["dim"]
        ),
        runtime=30,
    params:
        **rule_params(
            "gn_trial",
            spec=trial_spec,
            settings=lambda wildcards: PLAN.gn_trial_settings[wildcards.part],
        ),
    shell:
        JOB


rule gn_trials_table:
    """Statistics of exact kappa and bound tightness over the trials of GN part `part`."""
    input:
        lambda wildcards: PLAN.gn_trial_tables(wildcards.part),
    output:
        parquet="results/tables/gn_{part}.parquet",
        csv="results/tables/gn_{part}.csv",
    log:
        "results/logs/gn/{part}_table.log",
    benchmark:
        "results/benchmarks/gn/{part}_table.tsv"
    wildcard_constraints:
        part="|".join(PLAN.gn_trial_stages),
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        **rule_params(
            "gn_trials_table",
            experiment=lambda wildcards: GN[wildcards.part]["experiment"],
        ),
    shell:
        JOB


rule gn_sweep:
    """One GN-paper experiment (all its seeds) -> one table."""
    input:
        gn_sweep_files,
    output:
        parquet="results/tables/gn_{sweep}.parquet",
        csv="results/tables/gn_{sweep}.csv",
    log:
        "results/logs/gn/{sweep}.log",
    benchmark:
        "results/benchmarks/gn/{sweep}.tsv"
    wildcard_constraints:
        sweep="|".join(GN["sweeps"]) or "(?!)",
    # the longest jobs (fig7_batchnorm: over 2 minutes at paper scale), ready from the start:
    # started first, they run beside the trainings instead of after them
    priority: 2
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        gpu=0,
        mem_mb=4000,
        runtime=30,
    params:
        **rule_params(
            "gn_sweep",
            settings=lambda wildcards: PLAN.gn_sweep_settings[wildcards.sweep],
        ),
    shell:
        JOB
