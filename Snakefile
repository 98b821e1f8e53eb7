# Reproduce and extend the condition-number and Gauss-Newton-conditioning papers.
# Run: snakemake --cores 8 --resources gpu=1   (README: set-up, config, outputs)
from snakemake.utils import min_version

min_version("9.0")


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
