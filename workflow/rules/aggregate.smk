rule aggregate:
    """Statistics over the trials of one experiment (mean, std, 95% CI, quantiles, counts)."""
    input:
        experiment_trial_tables,
    output:
        parquet="results/tables/{experiment}.parquet",
        csv="results/tables/{experiment}.csv",
    log:
        "results/logs/aggregate/{experiment}.log",
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        swept=swept_json,
        code=code_fingerprint("stats"),
    script:
        "../../scripts/aggregate.py"
