"""Snakemake entry point of every rule: the job of rule `snakemake.rule` (matcond.jobs), in the
warm job server on a local run, else in this process (matcond.execution.jobserver)."""

from matcond.execution.jobserver import run_job

run_job(snakemake)  # noqa: F821 (Snakemake defines it)
