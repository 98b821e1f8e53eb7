# Reproduce and extend the condition-number and Gauss-Newton-conditioning papers.
# Run: snakemake --cores 8 --resources gpu=1   (README: set-up, config, outputs)
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/own_weights.smk"
include: "workflow/rules/gauss_newton.smk"


rule all:
    default_target: True
    input:
        all_targets(),
