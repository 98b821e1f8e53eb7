"""Rule `train`: one block of seeds of one setting -> a tidy parquet table per trial (and the
weights of those that save them), the block's manifest and its own benchmark (the process
that trains measures itself: under the job server Snakemake's `benchmark:` would see only the
waiting client)."""

from matcond.condition_number.run import run_block_job


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    run_block_job(
        block_json=snakemake.params.block,
        manifest=snakemake.output.manifest,
        benchmark=snakemake.output.benchmark,
        threads=snakemake.threads,
        device=snakemake.resources.device,
        gpu_jobs=snakemake.config["gpu_jobs"],
    )
