# Reproduce and extend the condition-number and Gauss-Newton-conditioning papers.
# Run: snakemake --cores 8 --resources gpu=1   (README: set-up, config, outputs)
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

# This checkout's own matcond (its src/), whichever one the environment has installed: the
# schema, fingerprints and jobs are those of the checkout that runs (scripts/job.py does the
# same for a job in a process of its own; the job server imports the package this process
# imported). A copy of the workflow without src/ uses the installed package.
OWN_SRC = Path(workflow.basedir) / "src"
if (OWN_SRC / "matcond").is_dir():
    sys.path.insert(0, str(OWN_SRC))
    import matcond

    if Path(matcond.__file__).parent.resolve() != (OWN_SRC / "matcond").resolve():
        sys.exit(
            f"matcond was already imported from {Path(matcond.__file__).parent}, not from this"
            f" workflow's {OWN_SRC / 'matcond'}: run Snakemake in a process of its own"
        )


# The paper config runs unless --configfile names others: then exactly what they list runs
# (several files merge in order; --config overrides single keys either way): common.smk.
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/execution.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/own_weights.smk"
include: "workflow/rules/gauss_newton.smk"


rule all:
    default_target: True
    input:
        PLAN.targets(),
