rule train:
    """Train one trial; write its tidy table and its weights (target, initial, final)."""
    output:
        table="results/trials/{trial}.parquet",
        weights="results/trials/{trial}.safetensors",
    log:
        "results/logs/train/{trial}.log",
    benchmark:
        "results/benchmarks/train/{trial}.tsv"
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        gpu=TRAIN_GPUS,
        mem_mb=train_mem_mb,
        runtime=train_runtime,
    params:
        spec=trial_spec,
        # not matcond.execution.devices: it picks where a trial runs, not what it computes
        code=code_fingerprint(
            "components", "targets", "models", "training", "optim", "run"
        ),
    script:
        "../../scripts/train_trial.py"
