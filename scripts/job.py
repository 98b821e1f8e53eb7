"""Every rule's shell command: ``python scripts/job.py LOG`` with the job's request on stdin
(matcond.server.client): the job runs on the warm job server of a local run, else here."""

import sys
from pathlib import Path

# this checkout's matcond first, whichever one is installed (as the Snakefile does)
OWN_SRC = Path(__file__).resolve().parents[1] / "src"
if (OWN_SRC / "matcond").is_dir():
    sys.path.insert(0, str(OWN_SRC))

from matcond.server.client import main  # noqa: E402

main(sys.argv)
