rule aggregate:
    """Statistics over the trials of one experiment (bootstrap intervals, quantiles, counts),
    and its per-trial table (every trial's rows stacked) for the claims and the theory.
    """
    input:
        lambda wildcards: PLAN.experiment_manifests(wildcards.experiment),
    output:
        parquet="results/tables/{experiment}.parquet",
        csv="results/tables/{experiment}.csv",
        per_trial="results/per_trial/{experiment}.parquet",
    log:
        "results/logs/aggregate/{experiment}.log",
    benchmark:
        "results/benchmarks/aggregate/{experiment}.tsv"
    # up to minutes (bootstrapping every epoch of ctrl_spectral_reg): started as soon as its
    # trials are done, before the remaining trainings, not last
    priority: 1
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        **rule_params(
            "aggregate",
            swept=swept_json,
            trials=experiment_trials_json,
        ),
    shell:
        JOB


rule divergence:
    """Every trial whose loss or weights became non-finite, with its epoch: the table behind
    the run's closing summary line and the report's list."""
    input:
        PLAN.manifests(),
    output:
        csv=DIVERGED_TABLE,
        html=report(
            "results/diverged_trials.html",
            caption="../report/diverged.rst",
            category="Claims",
        ),
    log:
        "results/logs/divergence.log",
    benchmark:
        "results/benchmarks/divergence.tsv"
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=1000,
        runtime=10,
    params:
        **rule_params(
            "divergence",
            trials=trials_json,
        ),
    shell:
        JOB
