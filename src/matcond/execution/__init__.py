"""How jobs run, not what they compute: the job server that forks warm job processes,
GPU claiming for concurrent jobs, and job logs. Nothing here changes a result, so no rule's
code fingerprint includes these modules (matcond.pipeline.fingerprints)."""
