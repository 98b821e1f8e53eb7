"""Snakemake entry point of rule `train`: one trial -> its tidy parquet table and weights.

On a local run the trial server (matcond.execution.trialserver) trains it in a forked child, so
this script imports neither torch nor pandas; without a server it trains the trial itself.
Either way the process that trains writes the job's benchmark (matcond.run.write_benchmark).
"""

import os
import signal
import sys

from matcond.execution.trialserver import request_trial

job = {
    "spec_json": snakemake.params.spec,
    "table": os.path.abspath(snakemake.output.table),
    "weights": os.path.abspath(snakemake.output.weights),
    "log": os.path.abspath(snakemake.log[0]),
    "benchmark": os.path.abspath(snakemake.output.benchmark),
    "threads": snakemake.threads,
    "device": snakemake.config["device"],
}
status = request_trial(**job)
if status is None:
    from matcond.run import run_trial_job

    run_trial_job(**job)
elif status < 0:
    sys.exit(
        f"the trial's process on the trial server was killed by {signal.Signals(-status).name} "
        f"(SIGKILL: often the out-of-memory killer); the server goes on; log: {snakemake.log[0]}"
    )
elif status != 0:
    sys.exit(f"training failed on the trial server: see {snakemake.log[0]}")
