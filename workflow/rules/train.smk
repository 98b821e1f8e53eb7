rule train:
    """Train one trial; write its tidy table and its weights (target, initial, final).

    Its benchmark is an output that the training process writes itself: a trial served by the
    trial server runs in the server's child, which Snakemake's `benchmark:` cannot see.
    """
    output:
        table="results/trials/{trial}.parquet",
        weights="results/trials/{trial}.safetensors",
        benchmark="results/benchmarks/train/{trial}.tsv",
    log:
        "results/logs/train/{trial}.log",
    priority: train_priority
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        gpu=TRAIN_GPUS,
        mem_mb=train_mem_mb,
        runtime=train_runtime,
    params:
        **rule_params(
            "train",
            spec=trial_spec,
        ),
    shell:
        JOB
