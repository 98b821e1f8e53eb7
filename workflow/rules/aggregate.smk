rule aggregate:
    """Statistics over the trials of one experiment (bootstrap intervals, quantiles, counts),
    and its per-trial table (every trial's rows stacked) for the claims and the theory.
    """
    input:
        experiment_trial_tables,
    output:
        parquet="results/tables/{experiment}.parquet",
        csv="results/tables/{experiment}.csv",
        per_trial="results/per_trial/{experiment}.parquet",
    log:
        "results/logs/aggregate/{experiment}.log",
    benchmark:
        "results/benchmarks/aggregate/{experiment}.tsv"
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        swept=swept_json,
        code=code_fingerprint("aggregate.py"),
    script:
        "../../scripts/aggregate.py"
