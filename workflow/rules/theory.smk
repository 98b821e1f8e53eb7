# The first-order theory of the condition-number error (src/matcond/theory.py) against the
# configured experiments of config key `theory.experiments` (THEORY_EXPERIMENTS, common.smk).


rule theory:
    """Measured vs predicted kappa and row-norm errors per cell and recorded epoch."""
    input:
        expand("results/per_trial/{experiment}.parquet", experiment=THEORY_EXPERIMENTS),
    output:
        parquet="results/tables/theory.parquet",
        csv="results/tables/theory.csv",
    log:
        "results/logs/theory.log",
    benchmark:
        "results/benchmarks/theory.tsv"
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        **rule_params("theory"),
    shell:
        JOB
