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


rule depth_theory:
    """The depth formula (docs/depth-theory.md): each deep linear trial's trained product
    against the predictions of the Gauss-Newton operator, per trial and per cell."""
    input:
        lambda wildcards: sorted(depth_theory_trials()),
    output:
        per_trial=DEPTH_PER_TRIAL,
        parquet="results/tables/depth_theory.parquet",
        csv="results/tables/depth_theory.csv",
    log:
        "results/logs/depth_theory.log",
    benchmark:
        "results/benchmarks/depth_theory.tsv"
    conda:
        "../../envs/matcond.yaml"
    threads: 2  # its eigensolves (the overlap, 1024 x 1024 at d = 32) use both
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=30,
    params:
        **rule_params(
            "depth_theory",
            trials=lambda wildcards: json.dumps(depth_theory_trials(), sort_keys=True),
            bottom_fraction=config["depth_theory"]["bottom_fraction"],
        ),
    shell:
        JOB
