"""One module per workflow rule, each with ``main(snakemake)``: what that rule's job does.

Every rule's script is ``scripts/job.py``, which hands its ``snakemake`` object to
:func:`matcond.execution.jobserver.run_job`: on a local run the warm job server runs
``main`` in a forked child, otherwise the job's own process does; either way with stderr (and
any traceback) in the job's log. A rule's ``code`` param is the fingerprint of its module
here (:mod:`matcond.fingerprints`).
"""
