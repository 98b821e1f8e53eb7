"""Every rule's shell command: ``python scripts/job.py LOG`` with the job's request on stdin
(matcond.execution.client): the job runs on the warm job server of a local run, else here."""

import sys

from matcond.execution.client import main

main(sys.argv)
