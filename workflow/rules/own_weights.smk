# Analyse the user's own weights (config `checkpoints: {name: path}`): a row per matrix.
# The paths are checked before any job runs (matcond.own_weights.load.check_checkpoint_paths);
# the rule's input is every file a path stands for (shards, index, config.json).
import json
import re

from matcond.own_weights.load import input_files

# The analysis settings as JSON: changing a threshold, rank_rtol, checkpoint_max_elements or
# checkpoint_conv reruns the analysis.
CHECKPOINT_SETTINGS = json.dumps(
    {
        **{
            key: config["defaults"][key]
            for key in ("effective_rank_thresholds", "rank_rtol")
        },
        "max_elements": config["checkpoint_max_elements"],
        "conv": config["checkpoint_conv"],
    },
    sort_keys=True,
)


rule analyze_weights:
    """Per-layer spectral table (parquet, CSV, and an HTML page for the report), the entries
    skipped and why, the figures (all spectra; a panel per matrix), and for a folder of
    checkpoints every checkpoint's component errors against the first.
    """
    input:
        lambda wildcards: input_files(config["checkpoints"][wildcards.name]),
    output:
        table="results/checkpoints/{name}.parquet",
        csv="results/checkpoints/{name}.csv",
        skipped="results/checkpoints/{name}_skipped.csv",
        png=report(
            "results/checkpoints/{name}_spectra.png",
            caption="../report/checkpoint.rst",
            category="Your weights",
        ),
        pdf="results/checkpoints/{name}_spectra.pdf",
        layers_png=report(
            "results/checkpoints/{name}_layers.png",
            caption="../report/checkpoint_layers.rst",
            category="Your weights",
        ),
        layers_pdf="results/checkpoints/{name}_layers.pdf",
        errors="results/checkpoints/{name}_errors.parquet",
        errors_csv="results/checkpoints/{name}_errors.csv",
        html=report(
            "results/checkpoints/{name}.html",
            caption="../report/checkpoint_table.rst",
            category="Your weights",
        ),
    log:
        "results/logs/checkpoints/{name}.log",
    benchmark:
        "results/benchmarks/checkpoints/{name}.tsv"
    wildcard_constraints:
        name="|".join(map(re.escape, config["checkpoints"])) or "(?!)",
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=lambda wildcards, input: 1500 + 6 * int(input.size_mb),
        runtime=lambda wildcards, input: 10 + int(input.size_mb) // 100,
    params:
        **rule_params(
            "analyze_weights",
            settings=CHECKPOINT_SETTINGS,
            path=lambda wildcards: config["checkpoints"][wildcards.name],
        ),
    shell:
        JOB
