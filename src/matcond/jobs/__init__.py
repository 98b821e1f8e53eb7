"""One module per workflow rule, each with ``main(snakemake)``: what that rule's job does.

Every rule's shell command is ``scripts/job.py`` with the job's request on stdin
(:mod:`matcond.server.client`): on a local run the warm job server runs ``main`` in a
forked child, otherwise the client's own process does; either way ``main`` gets what a
``script:`` gets of Snakemake's ``snakemake`` object, with stderr (and any traceback) in the
job's log. A rule's ``code`` param is the fingerprint of its module
here (:mod:`matcond.pipeline.fingerprints`).
"""
