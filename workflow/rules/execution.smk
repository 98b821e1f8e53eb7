# How this run executes, not what it computes: the job server, the checks before any job
# starts (results directory, memory, GPU, SLURM, the report's inputs), Snakemake's job rate
# limiter (off in a local run) and the damaged outputs set aside before the DAG is built.
import atexit

from matcond.server.client import ADDRESS_ENV
from matcond.execution.joblog import RUN_PID_ENV
from matcond.server.jobserver import JobServer, slurm_group_rules
from matcond.execution.scheduler import drop_job_rate_limiter
from matcond.execution.slurm import slurm_problem
from matcond.core.config import check_results_dir, results_dir_problem
from matcond.core.console import note, say
from matcond.pipeline.damage import by_block, damaged_files, query_only, set_aside
from matcond.pipeline.runlock import hold_run_lock, lock_problem
from matcond.pipeline.run_record import (
    RUN_CONFIG,
    read_run_config,
    report_command,
    write_run_config,
)

# The job server (matcond.server.jobserver) of a local run, or of a SLURM group job; its
# address reaches the jobs through the environment they inherit.
JOB_SERVERS = []


def start_job_server(rules=()):
    """Start a job server for this process's jobs (of rules `rules`, if given: the only job
    modules it imports first) unless config or deployment rule it out
    (`job_server: false`; --sdm conda: the server would not run in the rules' environment);
    either way no job goes to a server named by an inherited $MATCOND_JOB_SERVER.
    """
    os.environ.pop(ADDRESS_ENV, None)  # inherited: another run's server, not this one's
    own_environment = not workflow.deployment_settings.deployment_method
    if config["job_server"] and own_environment:
        server = JobServer.start(rules=rules)
        if server is not None:
            os.environ[ADDRESS_ENV] = server.published
            JOB_SERVERS.append(server)


def stop_job_servers():
    for server in JOB_SERVERS:
        server.stop()


# A SLURM group job: the Snakemake that sbatch started (executor slurm-jobstep) runs the
# group's jobs one after another, each through srun and a Snakemake of its own, which pass
# this process's environment on to the job's script. So one server here serves them all,
# with the job modules of the group's rules only (a group of training blocks: torch, not
# matplotlib's caches and the Gauss-Newton code: 4 s of start instead of 9).
# No hooks run in that process (`--no-hooks`), and at parse time Snakemake has not set up
# its executor or targets yet: its command line says what it is. The server stops when the
# process exits (or, killed, dies with it).
SLURM_GROUP_RULES = slurm_group_rules(sys.argv)
if len(SLURM_GROUP_RULES) > 1:
    start_job_server(SLURM_GROUP_RULES)
    atexit.register(stop_job_servers)


onstart:
    try:
        check_results_dir("results")
    except ConfigError as err:
        sys.exit(f"Cannot start: {err}")
    if problem := write_run_config(this_run_config()):
        note(f"{problem}; a later --report names no command for this run's config")
    if not workflow.local_exec and uses_slurm() and (problem := slurm_problem()):
        sys.exit(f"Cannot start: {problem}")
    if workflow.local_exec:
        total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
        if problem := PLAN.memory_problem(total_mb) or gpu_problem():
            sys.exit(f"Cannot start: {problem}")
        # local jobs end with this process (matcond.execution.joblog)
        os.environ[RUN_PID_ENV] = str(os.getpid())
        start_job_server()
        # Snakemake's job rate limiter cost a fifth of a core (matcond.execution.scheduler)
        drop_job_rate_limiter(workflow)


onsuccess:
    stop_job_servers()
    if Path(DIVERGED_TABLE).exists():  # the one-line summary of diverged trials
        import pandas as pd
        from matcond.core.arms import divergence_summary

        say(
            divergence_summary(
                pd.read_csv(DIVERGED_TABLE),
                len(PLAN.trial_by_path),
                {
                    name: e.get("expected_divergence", "")
                    for name, e in config["experiments"].items()
                },
            ),
            sys.stdout,
        )
    if Path(
        CLAIMS_TABLE
    ).exists():  # a smoke test says where the paper-scale verdicts are
        import pandas as pd
        from matcond.claims.markdown import smoke_test_line

        if line := smoke_test_line(pd.read_csv(CLAIMS_TABLE)):
            say(line, sys.stdout)


onerror:
    stop_job_servers()


def gpu_problem():
    """A local run's `device: cuda` where torch sees no GPU (the training jobs' own error,
    matcond.execution.devices.claim_device) or where --resources gpu=0 allows none, before
    any job starts; None otherwise."""
    if config["device"] != "cuda":
        return None
    if workflow.global_resources.get("gpu").value == 0:
        return "config key device is 'cuda' but --resources gpu=0 allows no GPU job"
    from matcond.execution.devices import DeviceUnavailableError, claim_device

    try:
        with claim_device("cuda", timeout=0):
            return None
    except DeviceUnavailableError as err:
        return str(err)
    except TimeoutError:  # every GPU is claimed now: the jobs wait for one
        return None


def uses_slurm():
    """Whether this run submits its jobs through the SLURM executor."""
    executor = workflow.executor_plugin
    return executor is not None and executor.cli_prefix == "slurm"


def this_run_config():
    """This invocation's config files (absolute) and --config values (the run record,
    matcond.pipeline.run_record, that --report on other config points to)."""
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
    targets = PLAN.targets()
    missing = [f for f in targets if not Path(f).exists()]
    if not missing:
        return None
    problem = f"{len(missing)} of {len(targets)} results of this config are missing ({missing[0]}, ...)"
    last = read_run_config()
    if last is None or last == json.loads(json.dumps(this_run_config())):
        return f"{problem}: run the workflow with this config first"
    return (
        f"{problem}; the last run here used other config ({RUN_CONFIG}): report on its "
        f"results with: {report_command(last, REPORT, sys.argv)}"
    )


def set_aside_damaged_outputs():
    """Move damaged outputs (truncated, altered, holding another trial, or computed with
    settings that no longer match the config; a block's manifest with a trial file missing;
    matcond.pipeline.damage.damaged_files) to results/damaged/ before the DAG is built, so
    that the run rebuilds them, never while another run works here
    (matcond.pipeline.runlock); a dry run and a query (--summary, --list-changes, --report,
    --lint, ...: matcond.pipeline.damage.query_only) only name them."""
    if not workflow.is_main_process:
        return
    if problem := results_dir_problem("results"):  # before Snakemake lists its files
        sys.exit(f"Cannot start: {problem}")
    outputs = [f for f in PLAN.targets() if not f.startswith("results/trials/")]
    # the report is no rule's output, but an interrupted --report leaves it empty
    outputs.append(REPORT)
    # a dry run, --lint (it parses without checking env vars) or another query
    inspect_only = (
        workflow.output_settings.dryrun
        or not workflow.check_envvars
        or query_only(sys.argv)
    )
    if not inspect_only:  # held while this run lives: no other run moves its files
        hold_run_lock()
    damaged = damaged_files(
        Path("results"), PLAN.train_requests(), outputs, PLAN.output_settings()
    )
    if damaged and not inspect_only:
        # another run's files (another config's outputs) are never moved under it
        if problem := lock_problem():
            sys.exit(
                f"Cannot start: {problem}; the {len(damaged)} damaged files this run "
                "would set aside are left in place: start it once that run has ended"
            )
        try:  # a read-only results/ cannot take them: one line, not a traceback
            check_results_dir("results")
        except ConfigError as err:
            sys.exit(f"Cannot start: {err}")
    for path, (problem, trial_files) in by_block(damaged).items():
        remedy = (
            f"make it again with --report {REPORT}"
            if str(path) == REPORT
            else "rebuilt"
        )
        named = (
            f"{path} and its {len(trial_files)} trial files" if trial_files else path
        )
        if inspect_only:
            fate = f"a run moves {'them' if trial_files else 'it'} to results/damaged/; {remedy}"
        else:
            try:
                for trial_file in trial_files:
                    set_aside(trial_file, Path("results"))
                fate = f"moved to {set_aside(path, Path('results'))}; {remedy}"
            except OSError as err:  # e.g. results/damaged is a file
                sys.exit(
                    f"Cannot start: {named} is damaged ({problem}) and cannot be set aside "
                    f"in results/damaged/ ({err.strerror or err}); make results/damaged "
                    "a directory (or move it away) and start again"
                )
        note(f"{named} {'are' if trial_files else 'is'} damaged ({problem}): {fate}")
    # the files rules make (a trial file, and a bundle's block manifest, is rebuilt through
    # its training job's manifest)
    job_manifests = set(PLAN.manifests())
    rebuilt = [
        str(path)
        for path in damaged
        if str(path) != REPORT
        and (path.parts[1] != "trials" or str(path) in job_manifests)
    ]
    if workflow.output_settings.dryrun and rebuilt:
        # Snakemake takes its forced targets before the Snakefile is read: say how to see them
        listed = " ".join(rebuilt) if len(rebuilt) <= 20 else "<the files named above>"
        note(
            f"this dry run's plan leaves out the rebuild of the {len(rebuilt)} damaged "
            f"files above (and of what depends on them); to see it, add --forcerun {listed} "
            "to this command"
        )


if workflow.is_main_process and (_problem := report_problem()):
    sys.exit(f"Cannot build the report: {_problem}")
set_aside_damaged_outputs()
