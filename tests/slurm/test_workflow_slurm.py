"""The workflow on the single-node SLURM test cluster, submitted through ``profiles/slurm``.

One cluster for the module (the ``slurm_cluster`` fixture; it stops every daemon afterwards and
checks that none is left):

- a small config (exp1_dimension, d in {4, 8}, 2 seeds, 20 epochs) runs to the end under SLURM
  and its trial tables, weights and experiment table are byte-identical to a local run's;
- a rule with ``resources: gpu=1`` gets ``--gpus=1`` and sees the node's (fake) GPU as
  ``CUDA_VISIBLE_DEVICES=0``; two such jobs are submitted at once even with
  ``--resources gpu=1``, because the profile makes ``gpu`` a local resource;
- a job cancelled with ``scancel`` while it runs is resubmitted (the profile's ``retries``) and
  the run completes.

A training job with ``device: cuda`` is not run here: the test node's GPU is a character
device standing in for one, torch sees no GPU, and the job stops with the message of
``matcond.execution.devices.claim_device`` (tests/execution/test_devices.py checks that message).
"""

from __future__ import annotations

import filecmp
import importlib.util
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from slurmcluster import SlurmCluster
from support import REPO, SNAKEMAKE

from matcond.core.config import load_yaml
from matcond.server.client import SERVED_BY

pytestmark = pytest.mark.workflow  # the workflow on a SLURM test cluster

PROFILE = REPO / "profiles" / "slurm"
# Bundles of one block each (far below any block's estimate): the trials group job runs two
# training jobs, on one job server. (Unset, a SLURM run's bundles are of 30 s: one here.)
ONE_BLOCK_PER_BUNDLE = ("--config", "train_job_seconds=0.001")
PLUGINS = ("snakemake_executor_plugin_slurm", "snakemake_executor_plugin_slurm_jobstep")
SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (.*)\)\.")


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> SlurmCluster:
    """The test cluster, once the executor plugins are known to be installed."""
    missing = [name for name in PLUGINS if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"Snakemake SLURM executor plugins not installed ({', '.join(missing)}); "
            "pip install -r requirements-dev.txt"
        )
    return request.getfixturevalue("slurm_cluster")


def small_config() -> dict:
    """One experiment, four tiny trials, two tiny Gauss-Newton sweeps."""
    tiny = {"datasets": ["gaussian"], "seeds": 1, "n_samples": 8}
    return {
        "device": "cpu",
        "defaults": {"epochs": 20, "batch_size": 16, "dim": 8},
        "experiments": {"exp1_dimension": {"grid": {"dim": [4, 8]}, "seeds": 2}},
        "gauss_newton": {
            "data": {"gaussian": {"n_samples": 8, "dim": 4, "outputs": 2}},
            "sweeps": {
                "fig6_leaky_width": {**tiny, "widths": [4]},
                "fig23_leaky_alpha": {**tiny, "widths": [4], "alphas": [0.0, 1.0]},
            },
        },
    }


def workflow_args(workdir: Path) -> list[str]:
    return [
        str(SNAKEMAKE),
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
    ]


def slurm_args(cluster: SlurmCluster) -> list[str]:
    """Submit through profiles/slurm to the test cluster; --verbose shows the sbatch calls."""
    return ["--profile", str(PROFILE), *cluster.executor_args, "--verbose"]


def sbatch_calls(log: str) -> list[str]:
    return [
        line.split("sbatch call: ", 1)[1] for line in log.splitlines() if "sbatch call: " in line
    ]


def submissions(log: str) -> list[tuple[str, str, str]]:
    """(Snakemake job, SLURM job id, SLURM log path) of every submission, in order."""
    return SUBMITTED.findall(log)


def tail(proc: subprocess.CompletedProcess[str]) -> str:
    return (proc.stdout or "")[-4000:] + (proc.stderr or "")[-4000:]


def files(root: Path, pattern: str = "*") -> list[Path]:
    return sorted(p.relative_to(root) for p in root.glob(pattern) if p.is_file())


def test_gpu_rule_gets_the_gpu(cluster: SlurmCluster, tmp_path: Path) -> None:
    (tmp_path / "Snakefile").write_text(
        "rule all:\n"
        '    input: expand("cvd{i}.txt", i=[1, 2])\n\n'
        "rule gpu:\n"
        '    output: "cvd{i}.txt"\n'
        "    resources: gpu=1, mem_mb=100, runtime=5\n"
        "    shell: 'echo \"$CUDA_VISIBLE_DEVICES\" > {output}'\n"
    )
    # --resources gpu=1, as on a workstation: with gpu global, Snakemake would submit one GPU
    # job at a time for the whole cluster.
    proc = cluster.run(
        str(SNAKEMAKE),
        *slurm_args(cluster),
        "--resources",
        "gpu=1",
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, tail(proc)
    calls = sbatch_calls(log)
    print("\n".join(["sbatch lines of the GPU rule:", *calls]))
    assert len(calls) == 2
    assert all(" --gpus=1" in call for call in calls), calls
    for i in (1, 2):
        assert (tmp_path / f"cvd{i}.txt").read_text().strip() == "0"
    # Both jobs were in SLURM's hands before either finished (SLURM then ran them one after the
    # other on the node's one GPU).
    submitted = [m.start() for m in SUBMITTED.finditer(log)]
    assert len(submitted) == 2
    assert max(submitted) < log.index("Finished jobid"), log[-3000:]
    for _, job_id, _ in submissions(log):
        assert cluster.wait_job(job_id) == "COMPLETED"
        alloc = cluster.run("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "AllocTRES").stdout
        assert "gres/gpu=1" in alloc


SLOW_SNAKEFILE = """\
rule slow:
    output: "slow.txt"
    resources: mem_mb=100, runtime=5
    shell:
        '''
        echo "$SLURM_JOB_ID" >> attempts.txt
        # The first attempt runs until it is cancelled; a retry finishes at once.
        if [ "$(wc -l < attempts.txt)" -eq 1 ]; then sleep 300; fi
        echo done > {output}
        '''
"""


def test_cancelled_job_is_retried(cluster: SlurmCluster, tmp_path: Path) -> None:
    assert load_yaml(PROFILE / "config.yaml")["retries"] >= 1
    (tmp_path / "Snakefile").write_text(SLOW_SNAKEFILE)
    attempts = tmp_path / "attempts.txt"
    out = tmp_path / "snakemake.log"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [str(SNAKEMAKE), *slurm_args(cluster)],
            cwd=tmp_path,
            env=cluster.env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        deadline = time.monotonic() + 120
        while not attempts.exists() or not attempts.read_text().strip():
            assert proc.poll() is None, out.read_text()[-4000:]
            assert time.monotonic() < deadline, "the job did not start within 120 s"
            time.sleep(0.5)
        first = attempts.read_text().split()[0]
        # the job wrote its id, so it runs; accounting may still record it as PENDING
        assert cluster.job_state(first) in ("RUNNING", "PENDING", "")
        cluster.run("scancel", first)
        rc = proc.wait(timeout=240)
    finally:
        if proc.poll() is None:  # stop Snakemake (SIGINT also cancels its jobs)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    log = out.read_text()
    assert rc == 0, log[-4000:]
    assert (tmp_path / "slow.txt").read_text().strip() == "done"
    ids = attempts.read_text().split()
    assert len(ids) == 2 and ids[0] == first and ids[1] != first, ids
    assert cluster.wait_job(first) == "CANCELLED"
    assert cluster.wait_job(ids[1]) == "COMPLETED"
    assert "Trying to restart job" in log
    assert [job_id for _, job_id, _ in submissions(log)] == ids


def test_workflow_matches_a_local_run(cluster: SlurmCluster, tmp_path: Path) -> None:
    config = yaml.safe_dump(small_config())
    local, remote = tmp_path / "local", tmp_path / "slurm"
    for workdir in (local, remote):
        workdir.mkdir()
        (workdir / "config.yaml").write_text(config)
    # The local run goes on beside the SLURM run, which spends most of its time polling.
    local_proc = subprocess.Popen(
        [*workflow_args(local), "--cores", "1"],
        cwd=local,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        start = time.monotonic()
        proc = cluster.run(
            *workflow_args(remote),
            *slurm_args(cluster),
            *ONE_BLOCK_PER_BUNDLE,
            cwd=remote,
            timeout=480,
            check=False,
        )
        print(f"SLURM run: {time.monotonic() - start:.0f} s")
        local_out, _ = local_proc.communicate(timeout=300)
    finally:
        if local_proc.poll() is None:
            local_proc.kill()
            local_proc.wait()
    assert local_proc.returncode == 0, local_out[-4000:]
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, tail(proc)

    # What was submitted: the trials as one group job, the GN sweeps as another,
    # aggregation/plots/claims as a third.
    calls = sbatch_calls(log)
    print("\n".join(["sbatch lines of the workflow:", *calls]))
    jobs = submissions(log)
    logdirs = sorted(
        Path(path).relative_to(remote / ".snakemake" / "slurm_logs").parts[0] for _, _, path in jobs
    )
    expected = [
        "group_gauss_newton_gn_sweep",
        "group_post_aggregate_claims_divergence_plot_theory",
    ]
    assert logdirs == [*expected, "group_trials_train"], logdirs
    assert all("--gpus" not in call and " --cpus-per-task=" in call for call in calls), calls
    for _, job_id, _ in jobs:
        assert cluster.wait_job(job_id) == "COMPLETED"

    # Every target of the config exists and is up to date: a dry run that plans the SLURM
    # run's bundles has nothing to do.
    dry = cluster.run(
        *workflow_args(remote),
        *slurm_args(cluster),
        *ONE_BLOCK_PER_BUNDLE,
        "-n",
        cwd=remote,
        check=False,
    )
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, tail(dry)

    # Same bits as the local run: every trial table, the blocks' manifests, the tables. The
    # SLURM run trained its blocks as bundles (matcond.pipeline.plan.Plan.train_jobs), each
    # with a manifest that lists its block's.
    trials = files(local / "results" / "trials", "**/*")
    assert len(trials) == 4 + 2, trials  # 4 trials (no weights: nothing reads them), 2 blocks
    bundles = files(remote / "results" / "trials", "bundles/*.json")
    assert len(bundles) == 2, bundles
    assert files(remote / "results" / "trials", "**/*") == sorted([*trials, *bundles])
    for name in trials:
        assert filecmp.cmp(
            local / "results" / "trials" / name, remote / "results" / "trials" / name, shallow=False
        ), name
    tables = files(local / "results" / "tables", "*.parquet")
    assert [str(t) for t in tables] == [
        "exp1_dimension.parquet",
        "gn_fig23_leaky_alpha.parquet",
        "gn_fig6_leaky_width.parquet",
        "readings.parquet",
        "theory.parquet",
    ]
    for table in tables:
        ours, theirs = (d / "results" / "tables" / table for d in (local, remote))
        assert filecmp.cmp(ours, theirs, shallow=False), table
    # Figures, claims: present and not empty.
    figures = files(local / "results" / "figures")
    assert figures and files(remote / "results" / "figures") == figures
    for name in [*(Path("figures") / f for f in figures), Path("claims.csv"), Path("claims.md")]:
        assert (remote / "results" / name).stat().st_size > 0, name

    # Each group job ran its jobs on one job server: every trial's log names the trials
    # group's server, every aggregation's and figure's log the post group's.
    def servers(rule: str) -> set[str]:
        logs = sorted((remote / "results" / "logs" / rule).rglob("*.log"))
        assert logs, rule
        firsts = [log.read_text().partition("\n")[0] for log in logs]
        assert all(line.startswith(SERVED_BY) for line in firsts), firsts
        return {line.removeprefix(SERVED_BY).split()[0] for line in firsts}

    trial_servers, post_servers = servers("train"), servers("aggregate") | servers("plots")
    assert len(trial_servers) == 1 and len(post_servers) == 1, (trial_servers, post_servers)
