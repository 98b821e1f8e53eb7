rule train:
    """Train one block of seeds of one setting (matcond.core.trials.Block), or with config key
    train_job_seconds a bundle of blocks (matcond.pipeline.plan.Plan.train_jobs): a table per
    trial (results/trials/{setting}/seed{s}.parquet, and the weights of the trials that save
    them), then each block's manifest, which lists those files with their sizes and SHA-256,
    and a bundle's manifest (results/trials/bundles/{name}.json), which lists its blocks'.

    The trial files are not declared outputs: one output per block keeps the DAG, Snakemake's
    metadata and the SLURM submissions per block. A missing or altered trial file sets its
    block's manifest aside before the run (set_aside_damaged_outputs), so the block is
    trained again. Its benchmark is an output that the training process writes itself: a
    block served by the job server runs in the server's child, which Snakemake's `benchmark:`
    cannot see.
    """
    output:
        manifest="results/trials/{job}.json",
        benchmark="results/benchmarks/train/{job}.tsv",
    log:
        "results/logs/train/{job}.log",
    priority: lambda wildcards: PLAN.train_priority(wildcards.job)
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        # cpu or cuda (matcond.pipeline.plan.Plan.block_device); a block on the GPU takes one
        # of its gpu_jobs slots in a local run and a GPU of its own under SLURM
        device=lambda wildcards: PLAN.train_device(wildcards.job),
        gpu_job=lambda wildcards: int(on_gpu(wildcards) and workflow.local_exec),
        gpu=lambda wildcards: int(on_gpu(wildcards) and not workflow.local_exec),
        # torch itself and the matrices of the trials that train side by side
        mem_mb=lambda wildcards: PLAN.train_mem_mb(wildcards.job),
        runtime=lambda wildcards: PLAN.train_runtime(wildcards.job),
    params:
        **rule_params(
            "train",
            block=lambda wildcards: PLAN.train_request(wildcards.job),
        ),
    shell:
        JOB
