# The first-order theory of the condition-number error (src/matcond/condition_number/theory.py)
# against the configured experiments of config key `theory.experiments`
# (matcond.pipeline.plan.Plan.theory_experiments), and the depth formula per training block.


rule theory:
    """Measured vs predicted kappa and row-norm errors per cell and recorded epoch."""
    input:
        expand(
            "results/per_trial/{experiment}.parquet",
            experiment=PLAN.theory_experiments,
        ),
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


rule depth_theory_block:
    """The depth formula (docs/depth-theory.md) on one training block's deep linear trials:
    each trained product against the predictions of the Gauss-Newton operator, per trial. One
    job per block, so that each starts when its block is trained."""
    input:
        manifest=lambda wildcards: f"results/trials/{PLAN.job_of_block(wildcards.block)}.json",
    output:
        "results/depth_theory/{block}.parquet",
    log:
        "results/logs/depth_theory/{block}.log",
    benchmark:
        "results/benchmarks/depth_theory/{block}.tsv"
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        gpu=0,
        mem_mb=1000,
        runtime=30,
    params:
        **rule_params(
            "depth_theory_block",
            trials=lambda wildcards: json.dumps(
                PLAN.depth_theory_blocks[wildcards.block], sort_keys=True
            ),
            bottom_fraction=config["depth_theory"]["bottom_fraction"],
            overlap_seeds=config["depth_theory"]["overlap_seeds"],
        ),
    shell:
        JOB


rule depth_theory:
    """The depth formula's per-trial table (every block's rows) and its table per cell."""
    input:
        [f"results/depth_theory/{block}.parquet" for block in PLAN.depth_theory_blocks],
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
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        **rule_params("depth_theory"),
    shell:
        JOB
