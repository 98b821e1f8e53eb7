"""The job server and its client, the top layer: ``scripts/job.py`` hands a job to the
server, a warm process that has imported every job module (:mod:`matcond.jobs`) and forks a
child per job, or runs it in its own process. How jobs run, not what they compute: no rule's
code fingerprint includes these modules (matcond.pipeline.fingerprints)."""
