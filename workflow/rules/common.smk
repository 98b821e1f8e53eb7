# Config validation, trial enumeration, the targets and the helpers every rule uses.
import atexit
import functools
import json
import os
import shlex
import shutil
import sys

from snakemake.utils import update_config

from matcond.figures.catalog import FIGURES
from matcond.figures.captions import (
    config_notes,
    experiment_summary,
    report_caption,
    report_label,
)
from matcond.own_weights.load import check_checkpoint_paths
from matcond.claims.check import (
    DEPTH_TABLE,
    OWN,
    claim_source,
    paper_values,
    pool_mismatches,
    settings_differences,
    table_settings,
    validate_claims,
)
from matcond.pipeline.config import (
    ConfigError,
    check_results_dir,
    command_line_values,
    load_yaml,
    validate_config,
)
from matcond.pipeline.damage import damaged_files, query_only, set_aside
from matcond.execution.client import ADDRESS_ENV, job_params
from matcond.execution.joblog import RUN_PID_ENV
from matcond.execution.jobserver import JobServer, slurm_group_jobs
from matcond.pipeline.fingerprints import code_fingerprint, module_path
from matcond.gn_experiments.columns import GN_TABLE_PREFIX
from matcond.pipeline.trials import all_trials, blocks_of, seeds_by_cell, swept_settings

PAPER_CONFIG = Path(workflow.basedir) / "config" / "config.yaml"
try:
    # a key given twice in one mapping is refused, not dropped
    _files = {
        Path(f).resolve(): load_yaml(f)
        for f in workflow.config_settings.configfiles or [PAPER_CONFIG]
    }
    # --config values arrive with every scalar a string (matcond.pipeline.config.command_line_values)
    update_config(config, command_line_values(dict(workflow.config_settings.config)))
    _validated = validate_config(config)
    check_checkpoint_paths(_validated)
    TRIALS = all_trials(_validated)
except ConfigError as err:
    sys.exit(f"Invalid config: {err}")  # the message names the key; no traceback
config.update(_validated)


# The job server (matcond.execution.jobserver) of a local run, or of a SLURM group job; its
# address reaches the jobs through the environment they inherit.
JOB_SERVERS = []


def start_job_server():
    """Start a job server for this process's jobs unless config or deployment rule it out
    (`job_server: false`; --sdm conda: the server would not run in the rules' environment);
    either way no job goes to a server named by an inherited $MATCOND_JOB_SERVER.
    """
    os.environ.pop(ADDRESS_ENV, None)  # inherited: another run's server, not this one's
    own_environment = not workflow.deployment_settings.deployment_method
    if config["job_server"] and own_environment:
        server = JobServer.start(warm_up=config["device"] == "cpu")
        if server is not None:
            os.environ[ADDRESS_ENV] = server.published
            JOB_SERVERS.append(server)


def stop_job_servers():
    for server in JOB_SERVERS:
        server.stop()


# A SLURM group job: the Snakemake that sbatch started (executor slurm-jobstep) runs the
# group's jobs one after another, each through srun and a Snakemake of its own, which pass
# this process's environment on to the job's script. So one server here serves them all.
# No hooks run in that process (`--no-hooks`), and at parse time Snakemake has not set up
# its executor or targets yet: its command line says what it is. The server stops when the
# process exits (or, killed, dies with it).
if slurm_group_jobs(sys.argv) > 1:
    start_job_server()
    atexit.register(stop_job_servers)


onstart:
    try:
        check_results_dir("results")
    except ConfigError as err:
        sys.exit(f"Cannot start: {err}")
    RUN_CONFIG.write_text(json.dumps(this_run_config()))
    if not workflow.local_exec and (problem := slurm_problem()):
        sys.exit(f"Cannot start: {problem}")
    if workflow.local_exec:
        if problem := memory_problem() or gpu_problem():
            sys.exit(f"Cannot start: {problem}")
        # local jobs end with this process (matcond.execution.joblog)
        os.environ[RUN_PID_ENV] = str(os.getpid())
        start_job_server()


onsuccess:
    stop_job_servers()
    if Path(DIVERGED_TABLE).exists():  # the one-line summary of diverged trials
        import pandas as pd
        from matcond.claims.arms import divergence_summary

        print(divergence_summary(pd.read_csv(DIVERGED_TABLE), len(TRIAL_BY_PATH)))


onerror:
    stop_job_servers()


TRIAL_BY_PATH = {t.path: t for trials in TRIALS.values() for t in trials}
DIVERGED_TABLE = "results/tables/diverged_trials.csv"
# The depth formula's per-trial table, in the per-trial tables' layout (claims name it
# DEPTH_TABLE, as an experiment).
DEPTH_PER_TRIAL = f"results/per_trial/{DEPTH_TABLE}.parquet"
REPORT = "results/report.html"  # where the README's command writes the report
TRAIN_GPUS = 1 if config["device"] == "cuda" else 0
# The experiments the theory table covers (config key theory.experiments) that are configured.
THEORY_EXPERIMENTS = [e for e in config["theory"]["experiments"] if e in TRIALS]
# The Gauss-Newton parts that run: the listed sweeps, and the parts on saved weights (exp7:
# initial and final; along_training: every recorded epoch) whose trials are configured.
GN = config["gauss_newton"]
GN_TRIAL_STAGES = {"exp7": GN["exp7"]["stages"], "along_training": ["recorded"]}
GN_TRIALS = {
    part: [
        t
        for t in TRIALS.get(GN[part]["experiment"], [])
        if t.spec["model"] in GN["exp7"]["models"]
    ]
    for part in GN_TRIAL_STAGES
}
_unsaved = [
    t for t in GN_TRIALS["along_training"] if not t.spec["save_recorded_weights"]
]
if _unsaved:
    sys.exit(
        f"Invalid config: config key experiments.{GN['along_training']['experiment']}: "
        "gauss_newton.along_training needs its trials to save their weights "
        "(setting save_recorded_weights: true)"
    )
GN_PARTS = [*GN["sweeps"], *(part for part, trials in GN_TRIALS.items() if trials)]
# The trials the depth formula is checked on (config key depth_theory.experiments): those of
# its configured experiments whose model is a chain of matrices (matcond.condition_number.depth_theory).
DEPTH_MODELS = ("linear", "deep_linear", "relu_mlp")
if DEPTH_TABLE in TRIALS:
    sys.exit(
        f"Invalid config: config key experiments.{DEPTH_TABLE}: the name of the depth "
        "formula's table (rule depth_theory); give the experiment another name"
    )
# Each trial once, though several of its experiments ask for it.
DEPTH_TRIALS = list(
    {
        t.path: t
        for e in config["depth_theory"]["experiments"]
        for t in TRIALS.get(e, [])
        if t.spec["model"] in DEPTH_MODELS
    }.values()
)
# Training jobs: blocks of config key block_size seeds per setting (matcond.pipeline.trials.Block).
# Weights are saved where something reads them (the GN parts, save_recorded_weights), or for
# every trial with config key save_weights.
BLOCKS = {b.path: b for b in blocks_of(TRIAL_BY_PATH.values(), config["block_size"])}
BLOCK_OF_TRIAL = {t.path: b for b in BLOCKS.values() for t in b.trials}
WEIGHTS_SAVED = {
    t.path
    for b in BLOCKS.values()
    if config["save_weights"] or b.trials[0].spec["save_recorded_weights"]
    for t in b.trials
} | {t.path for ts in [*GN_TRIALS.values(), DEPTH_TRIALS] for t in ts}
# The settings of each GN part as JSON: the jobs' params, and what their tables store.
GN_TRIAL_SETTINGS = {
    part: json.dumps(
        {
            **{
                k: v for k, v in GN["exp7"].items() if k not in ("experiment", "models")
            },
            "stages": stages,
        },
        sort_keys=True,
    )
    for part, stages in GN_TRIAL_STAGES.items()
}
GN_SWEEP_SETTINGS = {
    name: json.dumps({"sweep": sweep, "data": GN["data"]}, sort_keys=True)
    for name, sweep in GN["sweeps"].items()
}


def gn_sweep_files(wildcards):
    """The user's data files a sweep reads (gauss_newton.data.files): a change reruns it."""
    files = GN["data"]["files"]
    return [
        files[d]
        for d in GN["sweeps"][wildcards.sweep].get("datasets", [])
        if d in files
    ]


# The figures whose experiments and GN parts are all configured (and whose theory table is made).
DRAWN = [
    name
    for name, f in FIGURES.items()
    if set(f.experiments) <= set(TRIALS)
    and set(f.gauss_newton) <= set(GN_PARTS)
    and ("theory" not in f.tables or THEORY_EXPERIMENTS)
    and (DEPTH_TABLE not in f.tables or DEPTH_TRIALS)
]
# Relative to the working directory, so that a copied or moved project reruns nothing.
CLAIMS_FILE = os.path.relpath(Path(workflow.basedir) / "config" / "claims.yaml")


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
            table_settings(TRIALS, GN["sweeps"]),
            table_settings(all_trials(paper), paper["gauss_newton"]["sweeps"]),
            tables,
        )
    )


@functools.cache
def claims_yaml():
    """config/claims.yaml, read once (validated in the main process before any job)."""
    return load_yaml(CLAIMS_FILE)


@functools.cache
def paper_claims():
    """The claims of config/claims.yaml that are the papers' (not our own checks)."""
    return [c for c in claims_yaml()["claims"] if claim_source(c) != OWN]


if workflow.is_main_process:
    try:
        _claims = claims_yaml()
        _paper = _files.get(PAPER_CONFIG.resolve()) or load_yaml(PAPER_CONFIG)
        _sweeps = {*_paper.get("gauss_newton", {}).get("sweeps", {}), *GN["sweeps"]}
        validate_claims(
            _claims,
            {
                *_paper["experiments"],
                *TRIALS,
                *(f"{GN_TABLE_PREFIX}{s}" for s in _sweeps),
            },
            CLAIMS_FILE,
        )
    except ConfigError as err:
        sys.exit(f"Invalid claims: {err}")
    for _problem in pool_mismatches(
        _claims.get("heavy_tail", {}), table_settings(TRIALS, {})
    ):
        print(
            f"Note: {_problem}: its claims there draw from their own trials",
            file=sys.stderr,
        )
    for _note in config_notes(
        [*TRIALS, *([DEPTH_TABLE] if DEPTH_TRIALS else [])],
        GN_PARTS,
        [c["table"] for c in _claims["claims"]],
        [
            *(r["experiment"] for r in _claims.get("readings", [])),
            *(e["pool"] for e in _claims.get("heavy_tail", {}).values() if "pool" in e),
            *config["theory"]["experiments"],
            *config["depth_theory"]["experiments"],
            *(GN[p]["experiment"] for p in GN_TRIALS),
        ],
    ):
        print(f"Note: {_note}", file=sys.stderr)


wildcard_constraints:
    trial=r".+/seed\d+",
    block=r".+/seeds\d+-\d+",
    experiment="|".join(TRIALS),
    figure="|".join(DRAWN),


def rule_params(rule, **params):
    """The params of rule `rule` (constants or functions of the wildcards), its `code`
    fingerprint (the hash of its job module, matcond.jobs.<rule>, and of the package modules
    that imports, matcond.pipeline.fingerprints: editing them reruns the rule) and its `job`: the
    request that JOB sends (matcond.execution.client)."""
    code = code_fingerprint(module_path(f"matcond.jobs.{rule}"))
    return job_params(rule, config, code, **params)


# Every rule's shell command: the client with the job's request on stdin. Python of the rules'
# environment under a software deployment method (--sdm conda), else this Snakemake's own, as
# Snakemake picks for a `script:`.
_PYTHON = "python" if workflow.deployment_settings.deployment_method else sys.executable
_CLIENT = Path(workflow.basedir) / "scripts" / "job.py"
JOB = (
    f"{shlex.quote(_PYTHON)} {shlex.quote(str(_CLIENT))} {{log:q}} <<'MATCOND_JOB'\n"
    "{params.job}\nMATCOND_JOB"
)


def trial_spec(wildcards):
    """The canonical JSON settings of the trial at results/trials/{trial}."""
    return TRIAL_BY_PATH[wildcards.trial].spec_json


def block_json(wildcards):
    """The request (matcond.pipeline.trials.Block.request) of the block at results/trials/{block}."""
    return BLOCKS[wildcards.block].request(WEIGHTS_SAVED)


def block_manifest(trial_path):
    """The manifest of the block that trains the trial at results/trials/{trial_path}."""
    return f"results/trials/{BLOCK_OF_TRIAL[trial_path].path}.json"


def trial_manifest(wildcards):
    """The manifest of the block of the trial at results/trials/{trial} (a GN job's input)."""
    return block_manifest(wildcards.trial)


def train_mem_mb(wildcards):
    """Peak memory of a training job: torch itself plus a few copies of the matrices (its
    trials run one after another)."""
    return trial_mem_mb(BLOCKS[wildcards.block].trials[0].spec["dim"])


def trial_mem_mb(dim, gn=False):
    """MB a training job (or, ``gn``, a GN job on its weights: dense forms of side dim^2)
    of dimension ``dim`` needs."""
    return 1500 + 40 * dim**4 // 1_000_000 if gn else 1000 + 64 * dim * dim // 1_000_000


def memory_problem():
    """What does not fit in this machine's memory (the largest trial of each experiment, and
    of each GN part on saved weights), naming the config key; None if all fits."""
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    largest = [
        (f"experiments.{e}", max(t.spec["dim"] for t in ts), False)
        for e, ts in TRIALS.items()
    ]
    largest += [
        (f"gauss_newton.{part}", max(t.spec["dim"] for t in ts), True)
        for part, ts in GN_TRIALS.items()
        if ts
    ]
    for key, dim, gn in largest:
        if trial_mem_mb(dim, gn) > total_mb:
            job = "GN job on its weights" if gn else "training job"
            return (
                f"config key {key}: dim {dim} needs about {trial_mem_mb(dim, gn)} MB per "
                f"{job}; this machine has {total_mb} MB"
            )
    return None


def gpu_problem():
    """A local run's `device: cuda` where torch sees no GPU: the training jobs' own error
    (matcond.execution.devices.claim_device), before any job starts; None otherwise."""
    if config["device"] != "cuda":
        return None
    from matcond.execution.devices import DeviceUnavailableError, claim_device

    try:
        with claim_device("cuda", timeout=0):
            return None
    except DeviceUnavailableError as err:
        return str(err)
    except TimeoutError:  # every GPU is claimed now: the jobs wait for one
        return None


def slurm_problem():
    """The SLURM executor on a machine without SLURM's client tools (it would wait forever
    for its first job); None otherwise."""
    executor = workflow.executor_plugin
    if executor is None or executor.cli_prefix != "slurm":
        return None
    missing = [tool for tool in ("sbatch", "squeue") if shutil.which(tool) is None]
    if not missing:
        return None
    return (
        f"the SLURM executor (--executor slurm, profiles/slurm) needs {' and '.join(missing)} "
        "on PATH, which this machine lacks: run it where SLURM's client tools are (a login "
        "node), or run locally without the profile"
    )


# The config files and --config values of the last run in this directory, for --report.
RUN_CONFIG = Path(".snakemake/matcond_run_config.json")


def this_run_config():
    """This invocation's config files (absolute) and --config values."""
    return {
        "configfiles": [
            str(Path(f).resolve()) for f in workflow.config_settings.configfiles
        ],
        "config": dict(workflow.config_settings.config),
    }


def report_problem():
    """A --report on a config whose results are not all there (it would print thousands of
    warnings, then fail): how many are missing and, where the last run here used other
    config, the command that reports on its results; None otherwise."""
    if not any(a == "--report" or a.startswith("--report=") for a in sys.argv):
        return None
    targets = all_targets()
    missing = [f for f in targets if not Path(f).exists()]
    if not missing:
        return None
    problem = f"{len(missing)} of {len(targets)} results of this config are missing ({missing[0]}, ...)"
    if not RUN_CONFIG.exists() or (
        last := json.loads(RUN_CONFIG.read_text())
    ) == json.loads(json.dumps(this_run_config())):
        return f"{problem}: run the workflow with this config first"
    command = "snakemake" + "".join(f" --configfile {f}" for f in last["configfiles"])
    if last["config"]:
        values = [
            f"{k}={v if isinstance(v, str) else json.dumps(v)}"
            for k, v in last["config"].items()
        ]
        command += " --config " + " ".join(shlex.quote(v) for v in values)
    return (
        f"{problem}; the last run here used other config ({RUN_CONFIG}): report on its "
        f"results with: {command} --report {REPORT}"
    )


def train_runtime(wildcards):
    """Minutes a training job may take (generous: most trials take seconds on a CPU)."""
    block = BLOCKS[wildcards.block]
    spec = block.trials[0].spec
    steps = spec["epochs"] * spec["steps_per_epoch"]
    return 5 + len(block.trials) * steps * spec["dim"] ** 2 // 50_000_000


def train_priority(wildcards):
    """1 for the trials that come first (the longest jobs early, not last): those recorded
    at every epoch (their aggregation, which bootstraps every epoch, is the longest job after
    them) and those of d >= 1024 (seconds each); 0 for the rest."""
    spec = BLOCKS[wildcards.block].trials[0].spec
    return int(spec["record_every"] == 1 or spec["dim"] >= 1024)


def experiment_manifests(wildcards):
    """The manifests of the blocks that train an experiment's trials (an aggregate's input)."""
    return sorted({block_manifest(t.path) for t in TRIALS[wildcards.experiment]})


def experiment_trials_json(wildcards):
    """The experiment's trials (matcond.pipeline.trials.seeds_by_cell) as JSON: what its aggregate
    reads."""
    return json.dumps(experiment_cells(wildcards.experiment))


@functools.cache
def experiment_cells(experiment):
    """matcond.pipeline.trials.seeds_by_cell of an experiment's trials, once per experiment (Snakemake
    evaluates params several times)."""
    return seeds_by_cell(TRIALS[experiment])


def swept_json(wildcards):
    """The settings an experiment varies, as JSON (its table's grouping columns)."""
    return json.dumps(swept_settings(config["experiments"][wildcards.experiment]))


def figure_table_names(figure):
    """The tables a figure draws: its experiments', the configured optional ones', and its
    derived tables."""
    optional = [e for e in figure.optional if e in TRIALS]
    return [*figure.experiments, *optional, *figure.tables]


def figure_marks(figure):
    """The papers' values that figure ``figure`` marks (matcond.claims.check.paper_values)."""
    return paper_values(claims_yaml(), figure_table_names(FIGURES[figure]))


def figure_tables(wildcards):
    """The tables a figure draws, by name (:func:`figure_table_names`), the per-trial tables
    it reads and those from which it draws where a paper-sized mean of ours falls (each
    mark's experiment and pool, where configured)."""
    figure = FIGURES[wildcards.figure]
    tables = {
        name: f"results/tables/{name}.parquet" for name in figure_table_names(figure)
    }
    sampled = [
        m[k]
        for m in figure_marks(wildcards.figure)
        if "claim" in m
        for k in ("table", "pool")
    ]
    for name in [*figure.per_trial, *(n for n in sampled if n in TRIALS)]:
        tables[f"{name}_per_trial"] = f"results/per_trial/{name}.parquet"
    return tables


def figure_paper_values(wildcards):
    """The papers' values the figure marks (:func:`figure_marks`), as JSON."""
    return json.dumps(figure_marks(wildcards.figure))


def figure_category(wildcards):
    """The figure's report category."""
    return FIGURES[wildcards.figure].category


def figure_caption(wildcards):
    """The figure's caption with the settings of its experiments or GN parts, for the report."""
    figure = FIGURES[wildcards.figure]
    summaries = {
        e: cached_summary(e)
        for e in [*figure.experiments, *figure.optional]
        if e in TRIALS
    }
    gn_settings = {
        p: GN[p] if p in GN_TRIALS else GN["sweeps"][p] for p in figure.gauss_newton
    }
    tables = figure_table_names(figure)
    on_figure = [c for c in paper_claims() if c["table"] in tables]
    return report_caption(wildcards.figure, summaries, gn_settings, on_figure)


def figure_label(wildcards):
    """The figure's label in the report (its paper name, in the papers' order)."""
    return {"figure": report_label(wildcards.figure)}


@functools.cache
def cached_summary(experiment):
    """matcond.figures.captions.experiment_summary of an experiment, once (not once per figure)."""
    return experiment_summary(TRIALS[experiment])


def all_manifests():
    """Every block's manifest: the training jobs' outputs."""
    return [f"results/trials/{path}.json" for path in BLOCKS]


def trials_json(wildcards):
    """Each experiment's trials (matcond.pipeline.trials.seeds_by_cell), as JSON (the same for any
    order of the config's keys)."""
    return json.dumps({e: experiment_cells(e) for e in TRIALS}, sort_keys=True)


def all_per_trial_tables():
    return expand("results/per_trial/{experiment}.parquet", experiment=TRIALS)


def claims_tables():
    """The per-trial tables the claims read: every experiment's, and the depth formula's."""
    return all_per_trial_tables() + ([DEPTH_PER_TRIAL] if DEPTH_TRIALS else [])


def all_gn_sweep_tables():
    """The GN sweeps' tables (claims on gn_{sweep} read them)."""
    return expand("results/tables/gn_{sweep}.parquet", sweep=GN["sweeps"])


def depth_theory_tables():
    """The depth formula's tables (rule depth_theory), if it has trials."""
    if not DEPTH_TRIALS:
        return []
    return [
        DEPTH_PER_TRIAL,
        "results/tables/depth_theory.parquet",
        "results/tables/depth_theory.csv",
    ]


@functools.cache
def depth_theory_trials():
    """The depth formula's trials: by the block that trains them (its path below
    results/trials), the setting (``spec`` without the seed) and the ``seeds``."""
    by_block = {}
    for t in DEPTH_TRIALS:
        cell = {k: v for k, v in t.spec.items() if k != "seed"}
        block = by_block.setdefault(
            BLOCK_OF_TRIAL[t.path].path, {"spec": cell, "seeds": []}
        )
        block["seeds"].append(t.seed)
    return by_block


def depth_theory_block_json(wildcards):
    """A depth_theory_block job's request, the block's depth trials (JSON)."""
    return json.dumps(depth_theory_trials()[wildcards.block], sort_keys=True)


def depth_theory_block_tables(wildcards):
    """The per-block tables rule depth_theory gathers, in the order of its trials."""
    return [f"results/depth_theory/{block}.parquet" for block in depth_theory_trials()]


def all_targets():
    """Every table, every figure whose experiments are configured, the claims, the analyses of
    the configured weight files."""
    tables = expand(
        "results/tables/{experiment}.{ext}", experiment=TRIALS, ext=["parquet", "csv"]
    )
    if THEORY_EXPERIMENTS:
        tables += ["results/tables/theory.parquet", "results/tables/theory.csv"]
    tables += depth_theory_tables()
    tables += expand(
        "results/tables/gn_{part}.{ext}", part=GN_PARTS, ext=["parquet", "csv"]
    )
    figures = expand("results/figures/{figure}.{ext}", figure=DRAWN, ext=["png", "pdf"])
    analyses = expand(
        "results/checkpoints/{name}{suffix}",
        name=config["checkpoints"],
        suffix=[".parquet", ".csv", "_skipped.csv", "_spectra.png", "_spectra.pdf"]
        + ["_errors.parquet", "_errors.csv"],
    )
    claims = ["results/claims.csv", "results/claims.parquet", "results/claims.html"]
    claims += ["results/readings.md"]
    claims += [DIVERGED_TABLE, "results/diverged_trials.html"]
    claims = claims if TRIALS else []  # a config of GN sweeps or checkpoints only
    # the intermediates too, so that a deleted one is rebuilt by a plain rerun (a deleted
    # trial file sets its block's manifest aside before the run: set_aside_damaged_outputs)
    trials = all_manifests()
    gn_trials = [
        f"results/gn/{part}/{t.path}.parquet"
        for part, part_trials in GN_TRIALS.items()
        for t in part_trials
    ]
    return (
        tables
        + figures
        + analyses
        + claims
        + trials
        + all_per_trial_tables()
        + gn_trials
    )


def set_aside_damaged_outputs():
    """Move damaged outputs (truncated, altered, holding another trial, or computed with
    settings that no longer match the config; a block's manifest with a trial file missing;
    matcond.pipeline.damage.damaged_files) to
    results/damaged/ before the DAG is built, so that the run rebuilds them; a dry run and a
    query (--summary, --list-changes, --report, --lint, ...: matcond.pipeline.damage.query_only) only
    name them."""
    if not workflow.is_main_process:
        return
    blocks = {path: block.request(WEIGHTS_SAVED) for path, block in BLOCKS.items()}
    outputs = [f for f in all_targets() if not f.startswith("results/trials/")]
    # the report is no rule's output, but an interrupted --report leaves it empty
    outputs.append(REPORT)
    settings = {
        f"results/tables/gn_{name}.parquet": GN_SWEEP_SETTINGS[name]
        for name in GN["sweeps"]
    }
    for part, part_trials in GN_TRIALS.items():
        for t in part_trials:
            settings[f"results/gn/{part}/{t.path}.parquet"] = GN_TRIAL_SETTINGS[part]
    # a dry run, --lint (it parses without checking env vars) or another query
    inspect_only = (
        workflow.output_settings.dryrun
        or not workflow.check_envvars
        or query_only(sys.argv)
    )
    damaged = damaged_files(Path("results"), blocks, outputs, settings)
    for path, problem in damaged.items():
        remedy = (
            f"make it again with --report {REPORT}"
            if str(path) == REPORT
            else "rebuilt"
        )
        if inspect_only:
            fate = f"a run moves it to results/damaged/; {remedy}"
        else:
            fate = f"moved to {set_aside(path, Path('results'))}; {remedy}"
        print(f"Note: {path} is damaged ({problem}): {fate}", file=sys.stderr)
    # the files rules make (a trial file is rebuilt through its block's manifest)
    rebuilt = [
        str(path)
        for path in damaged
        if str(path) != REPORT
        and not (path.parts[1] == "trials" and path.suffix != ".json")
    ]
    if workflow.output_settings.dryrun and rebuilt:
        # Snakemake takes its forced targets before the Snakefile is read: say how to see them
        listed = " ".join(rebuilt) if len(rebuilt) <= 20 else "<the files named above>"
        print(
            f"Note: this dry run's plan leaves out the rebuild of the {len(rebuilt)} damaged "
            f"files above (and of what depends on them); to see it, add --forcerun {listed} "
            "to this command",
            file=sys.stderr,
        )


if workflow.is_main_process and (_problem := report_problem()):
    sys.exit(f"Cannot build the report: {_problem}")
set_aside_damaged_outputs()
