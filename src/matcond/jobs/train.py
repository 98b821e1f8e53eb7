"""Rule `train`: one trial -> its tidy parquet table, its weights and its own benchmark (the
process that trains measures itself: under the job server Snakemake's `benchmark:` would see
only the waiting client)."""

from matcond.run import run_trial_job


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    run_trial_job(
        spec_json=snakemake.params.spec,
        table=snakemake.output.table,
        weights=snakemake.output.weights,
        benchmark=snakemake.output.benchmark,
        threads=snakemake.threads,
        device=snakemake.config["device"],
    )
