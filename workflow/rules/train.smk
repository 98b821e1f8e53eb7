rule train:
    """Train one block of seeds of one setting (matcond.core.trials.Block): a table per trial
    (results/trials/{setting}/seed{s}.parquet, and the weights of the trials that save them),
    then the block's manifest, which lists those files with their sizes and SHA-256.

    The trial files are not declared outputs: one output per block keeps the DAG, Snakemake's
    metadata and the SLURM submissions per block. A missing or altered trial file sets its
    block's manifest aside before the run (set_aside_damaged_outputs), so the block is
    trained again. Its benchmark is an output that the training process writes itself: a
    block served by the job server runs in the server's child, which Snakemake's `benchmark:`
    cannot see.
    """
    output:
        manifest="results/trials/{block}.json",
        benchmark="results/benchmarks/train/{block}.tsv",
    log:
        "results/logs/train/{block}.log",
    priority: lambda wildcards: PLAN.train_priority(wildcards.block)
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        # cpu or cuda (matcond.pipeline.plan.Plan.block_device); a block on the GPU takes one
        # of its gpu_jobs slots in a local run and a GPU of its own under SLURM
        device=lambda wildcards: PLAN.block_device(wildcards.block),
        gpu_job=lambda wildcards: int(on_gpu(wildcards) and workflow.local_exec),
        gpu=lambda wildcards: int(on_gpu(wildcards) and not workflow.local_exec),
        # torch itself and the matrices of the trials that train side by side
        mem_mb=lambda wildcards: PLAN.train_mem_mb(wildcards.block),
        runtime=lambda wildcards: PLAN.train_runtime(wildcards.block),
    params:
        **rule_params(
            "train",
            block=lambda wildcards: PLAN.blocks[wildcards.block].request(
                PLAN.weights_saved
            ),
        ),
    shell:
        JOB
