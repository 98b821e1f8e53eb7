"""How jobs run, not what they compute, at the bottom with :mod:`matcond.core`: GPU claiming
for concurrent jobs (``devices``), forked workers for a job on several cores (``forked``), job
logs, SLURM's settings, Snakemake's scheduler in a local run (``scheduler``). Nothing here
changes a result, so no rule's code fingerprint includes these modules
(matcond.pipeline.fingerprints)."""
