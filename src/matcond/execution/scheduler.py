"""Snakemake's scheduler in a local run: its job rate limiter turned off.

Snakemake (9.27) limits how many jobs it starts per timespan (``--max-jobs-per-timespan``,
default 100/1s). With the limiter on, every scheduling pass ends by starting a timer that
triggers another pass one timespan later, and every finished job triggers a pass of its
own: so each finished job adds a chain of passes, one a second, that lasts as long as jobs
wait to run (snakemake/snakemake issue 3804, pull request 3744). Each pass resets the params of
every waiting job. In the paper config's run on 2 cores (hundreds of waiting training
blocks) Snakemake's own process held over 200 timer threads and used 22 % of a core, taken
from the jobs (docs/benchmarks.md, "Snakemake's own process"). A local run is bounded by
``--cores``, not by a submission rate, so it runs without the limiter; a cluster run keeps
it (a submission rate is what it is for).
"""

from __future__ import annotations


def drop_job_rate_limiter(workflow) -> None:
    """Turn off the job rate limiter of ``workflow``'s scheduler (a Snakefile's ``workflow``,
    from its ``onstart``, when the scheduler exists): a pass of the scheduler then runs only
    when a job finishes."""
    workflow.scheduler.job_rate_limiter = None
