# The config, validated, and the run it asks for (matcond.pipeline.plan.Plan: trials, blocks,
# GN parts, figures, targets); the params and command every rule shares.
import functools
import json
import os
import shlex
import sys

from snakemake.utils import update_config

from matcond.claims.check import (
    OWN,
    claim_source,
    paper_values,
    settings_differences,
    table_settings,
)
from matcond.server.client import job_params
from matcond.figures.captions import report_caption, report_label
from matcond.figures.overview import entry
from matcond.own_weights.load import check_checkpoint_paths
from matcond.core.config import (
    ConfigError,
    check_command_line,
    command_line_values,
    load_yaml,
    validate_config,
)
from matcond.pipeline.fingerprints import code_fingerprint, module_path
from matcond.pipeline.plan import (
    CLAIMS_TABLE,
    DEPTH_PER_TRIAL,
    DIVERGED_TABLE,
    REPORT,
    Plan,
    gn_mem_mb,
)
from matcond.core.trials import all_trials, cells_of, config_cells, swept_settings

PAPER_CONFIG = Path(workflow.basedir) / "config" / "config.yaml"


def local_gpus(device):
    """The GPUs a local run's main process may train on (device auto or cuda): those torch
    sees, at most N of --resources gpu=N; 0 elsewhere (under SLURM the submit host's GPUs say
    nothing about the nodes': there auto means the CPU, and job steps follow their main
    process)."""
    if device == "cpu" or not (workflow.is_main_process and workflow.local_exec):
        return 0
    from matcond.execution.devices import visible_gpu_count

    seen = visible_gpu_count()
    allowed = workflow.global_resources.get("gpu").value  # None without --resources gpu
    return seen if allowed is None else min(allowed, seen)


try:
    # a key given twice in one mapping is refused, not dropped
    CONFIG_FILES = {
        Path(f).resolve(): load_yaml(f)
        for f in workflow.config_settings.configfiles or [PAPER_CONFIG]
    }
    # The paper config where no --configfile is given, read here with the C YAML loader (a
    # `configfile:` directive reads it with PyYAML's Python one: 0.8 s at every Snakemake
    # start, a SLURM job's included)
    if not workflow.config_settings.configfiles:
        update_config(config, CONFIG_FILES[PAPER_CONFIG.resolve()])
    # --config values arrive with every scalar a string (matcond.core.config.command_line_values)
    # (their depth checked first: matcond.core.config.check_depth)
    _values = command_line_values(dict(workflow.config_settings.config))
    check_command_line(sys.argv)
    update_config(config, _values)
    _validated = validate_config(config)
    check_checkpoint_paths(_validated)
    PLAN = Plan(
        _validated,
        all_trials(_validated),
        gpus=local_gpus(_validated["device"]),
        # jobs submitted to a cluster (and every job's own Snakemake): bundles of blocks
        cluster=not (workflow.is_main_process and workflow.local_exec),
    )
except ConfigError as err:
    sys.exit(f"Invalid config: {err}")  # the message names the key; no traceback
config.update(_validated)
if PLAN.gpus:
    # GPU training jobs at once: config key gpu_jobs per GPU (local_gpus); each job claims
    # a slot of one (matcond.execution.devices)
    workflow.register_resource("gpu_job", config["gpu_jobs"] * PLAN.gpus)
TRIALS = PLAN.trials
CELLS = cells_of(TRIALS)  # each experiment's settings, once per cell
GN = config["gauss_newton"]
# Relative to the working directory, so that a copied or moved project reruns nothing.
CLAIMS_FILE = os.path.relpath(Path(workflow.basedir) / "config" / "claims.yaml")


wildcard_constraints:
    trial=r".+/seed\d+",
    block=r".+/seeds\d+-\d+",
    job=r".+/seeds\d+-\d+|bundles/[0-9a-f]+",
    experiment="|".join(TRIALS),
    figure="|".join(PLAN.drawn),


def on_gpu(wildcards):
    """Whether a training job trains on the GPU (matcond.pipeline.plan.Plan.train_device)."""
    return PLAN.train_device(wildcards.job) == "cuda"


def rule_params(rule, **params):
    """The params of rule `rule` (constants or functions of the wildcards), its `code`
    fingerprint (the hash of its job module, matcond.jobs.<rule>, and of the package modules
    that imports, matcond.pipeline.fingerprints: editing them reruns the rule) and its `job`: the
    request that JOB sends (matcond.server.client). The fingerprint is computed for the
    first job of the rule, not at parse time: the Snakemake that a SLURM job starts for one
    block hashes the training code only (0.07 s instead of 0.4 s for every rule's)."""
    return job_params(rule, config, **params, code=lambda wildcards: rule_code(rule))


@functools.cache
def rule_code(rule):
    """Rule `rule`'s code fingerprint (rule_params)."""
    return code_fingerprint(module_path(f"matcond.jobs.{rule}"))


# Every rule's shell command: the client with the job's request on stdin. Python of the rules'
# environment under a software deployment method (--sdm conda), else this Snakemake's own, as
# Snakemake picks for a `script:`.
_PYTHON = "python" if workflow.deployment_settings.deployment_method else sys.executable
_CLIENT = Path(workflow.basedir) / "scripts" / "job.py"
JOB = (
    f"{shlex.quote(_PYTHON)} {shlex.quote(str(_CLIENT))} {{log:q}} <<'MATCOND_JOB'\n"
    "{params.job}\nMATCOND_JOB"
)


@functools.cache
def claims_yaml():
    """config/claims.yaml, read once (validated in the main process before any job)."""
    return load_yaml(CLAIMS_FILE)


@functools.cache
def paper_claims():
    """The claims of config/claims.yaml that are the papers' (not our own checks)."""
    return [c for c in claims_yaml()["claims"] if claim_source(c) != OWN]


@functools.cache
def claims_settings_differ():
    """The tables of the papers' claims that this run configures otherwise than the paper
    config (matcond.claims.check.settings_differences), as JSON: those claims are not judged.
    """
    tables = [c["table"] for c in paper_claims()]
    if not workflow.config_settings.configfiles and not workflow.config_settings.config:
        return json.dumps({})  # the paper config itself
    paper = validate_config(load_yaml(PAPER_CONFIG))
    return json.dumps(
        settings_differences(
            table_settings(CELLS, GN["sweeps"]),
            table_settings(config_cells(paper), paper["gauss_newton"]["sweeps"]),
            tables,
        )
    )


# Input functions and params of the rules, from the plan.
def trial_spec(wildcards):
    """The canonical JSON settings of the trial at results/trials/{trial}."""
    return PLAN.trial_by_path[wildcards.trial].spec_json


def trial_manifest(wildcards):
    """The manifest of the training job of the trial at results/trials/{trial} (a GN job's
    input)."""
    return PLAN.block_manifest(wildcards.trial)


def experiment_trials_json(wildcards):
    """The experiment's trials (matcond.core.trials.seeds_by_cell) as JSON."""
    return json.dumps(PLAN.experiment_cells(wildcards.experiment))


def swept_json(wildcards):
    """The settings an experiment varies, as JSON (its table's grouping columns)."""
    return json.dumps(swept_settings(config["experiments"][wildcards.experiment]))


def trials_json(wildcards):
    """Each experiment's trials, as JSON (the same for any order of the config's keys)."""
    return json.dumps({e: PLAN.experiment_cells(e) for e in TRIALS}, sort_keys=True)


def claim_figures():
    """Per claim the figures drawn from its table (the claims page and the landing page
    link them)."""
    drawn = PLAN.figures_by_table()
    return {c["claim_id"]: drawn.get(c["table"], []) for c in claims_yaml()["claims"]}


def figure_marks(figure):
    """The papers' values that figure ``figure`` marks (matcond.claims.check.paper_values)."""
    return paper_values(claims_yaml(), PLAN.figure_table_names(figure))


def figure_caption(wildcards):
    """The figure's caption with the settings of its experiments or GN parts, for the report."""
    summaries, gn_settings = PLAN.figure_settings(wildcards.figure)
    tables = PLAN.figure_table_names(wildcards.figure)
    on_figure = [c for c in claims_yaml()["claims"] if c["table"] in tables]
    paper = [c for c in on_figure if claim_source(c) != OWN]
    own = [c for c in on_figure if claim_source(c) == OWN]
    return report_caption(wildcards.figure, summaries, gn_settings, paper, own)


def gn_sweep_files(wildcards):
    """The user's data files a sweep reads (gauss_newton.data.files): a change reruns it."""
    files = GN["data"]["files"]
    datasets = GN["sweeps"][wildcards.sweep].get("datasets", [])
    return [files[d] for d in datasets if d in files]
