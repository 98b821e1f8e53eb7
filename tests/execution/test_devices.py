"""GPU choice for concurrent training jobs (matcond.execution.devices), on the CPU with fake GPU
counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch
import yaml
from support import SNAKEMAKE

from matcond.execution.devices import (
    LOCK_DIR_ENV,
    DeviceUnavailableError,
    claim_device,
    default_lock_dir,
    gpu_ids,
    lock_path,
)


@pytest.fixture(autouse=True)
def no_gpu_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests say what the environment holds; nothing comes from the caller's shell or job."""
    for name in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID", LOCK_DIR_ENV):
        monkeypatch.delenv(name, raising=False)


def claim(lock_dir: Path, **kwargs):
    """claim_device('cuda') outside SLURM, with a fake GPU count (default 2) and no env."""
    kwargs.setdefault("device_count", 2)
    kwargs.setdefault("scope", "")
    return claim_device("cuda", lock_dir=lock_dir, **kwargs)


def test_cpu_claims_nothing(tmp_path: Path) -> None:
    with claim_device("cpu", lock_dir=tmp_path) as device:
        assert device == torch.device("cpu")
    assert list(tmp_path.iterdir()) == []


def test_unknown_device_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="config key device"):
        with claim_device("tpu", lock_dir=tmp_path):
            pass


@pytest.mark.parametrize("visible", [None, "0", ""])
def test_cuda_without_gpu_is_a_clear_error(tmp_path: Path, visible: str | None) -> None:
    """Also when CUDA_VISIBLE_DEVICES names a GPU torch cannot see (a SLURM job on a node
    whose gres GPU is not a real one)."""
    with pytest.raises(
        DeviceUnavailableError, match="config key device is 'cuda'.*set device: cpu"
    ):
        with claim(tmp_path, device_count=0, visible=visible):
            pass


def test_gpu_ids_follow_cuda_visible_devices() -> None:
    assert gpu_ids(2, None) == ["0", "1"]
    assert gpu_ids(2, "2,3") == ["2", "3"]
    assert gpu_ids(1, " 3 , 1") == ["3"]  # torch sees only as many as device_count
    assert gpu_ids(1, "GPU-8f6e1c2a") == ["GPU-8f6e1c2a"]


def test_lock_dir_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert default_lock_dir().is_dir()  # the system temporary directory
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    assert default_lock_dir() == tmp_path


def test_two_claims_get_different_gpus(tmp_path: Path) -> None:
    with claim(tmp_path) as first, claim(tmp_path) as second:
        assert {first, second} == {torch.device("cuda", 0), torch.device("cuda", 1)}
    # Both released: the next claim gets the first GPU again.
    with claim(tmp_path) as again:
        assert again == torch.device("cuda", 0)


def test_concurrent_claims_from_threads_never_share(tmp_path: Path) -> None:
    """Eight threads, two GPUs: at no time do two holders have the same GPU."""
    holders: dict[int, int] = {0: 0, 1: 0}
    clash = []
    guard = threading.Lock()

    def job() -> None:
        with claim(tmp_path, timeout=30, poll=0.01) as device:
            with guard:
                holders[device.index] += 1
                if holders[device.index] > 1:
                    clash.append(device.index)
            time.sleep(0.05)
            with guard:
                holders[device.index] -= 1

    threads = [threading.Thread(target=job) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert clash == []
    assert holders == {0: 0, 1: 0}


def test_a_third_claim_waits_for_a_free_gpu(tmp_path: Path) -> None:
    first = claim(tmp_path)
    assert first.__enter__() == torch.device("cuda", 0)
    with claim(tmp_path) as second:
        assert second == torch.device("cuda", 1)
        # With a timeout it gives up and says so.
        with pytest.raises(TimeoutError, match="stayed claimed"):
            with claim(tmp_path, timeout=0.2, poll=0.05):
                pass
        # Without one it waits, and gets the GPU that the first holder gives back.
        got: list[torch.device] = []

        def third() -> None:
            with claim(tmp_path, poll=0.02) as device:
                got.append(device)

        waiter = threading.Thread(target=third)
        waiter.start()
        time.sleep(0.3)
        assert got == []  # still waiting
        first.__exit__(None, None, None)
        waiter.join(timeout=10)
        assert got == [torch.device("cuda", 0)]


def test_gpu_jobs_share_a_gpu_up_to_its_slots(tmp_path: Path) -> None:
    """Two slots per GPU: two GPUs take four jobs, the first two on different GPUs (the
    least-held GPU first); a fifth waits; a freed slot goes to the next claim."""
    claims = [claim(tmp_path, slots=2) for _ in range(4)]
    devices = [c.__enter__() for c in claims]
    assert devices[:2] == [torch.device("cuda", 0), torch.device("cuda", 1)]
    assert sorted(d.index for d in devices) == [0, 0, 1, 1]
    with pytest.raises(TimeoutError, match="2 jobs each"):
        with claim(tmp_path, slots=2, timeout=0.2, poll=0.05):
            pass
    claims[3].__exit__(None, None, None)
    with claim(tmp_path, slots=2, timeout=0.2, poll=0.05) as freed:
        assert freed == devices[3]
    for c in claims[:3]:
        c.__exit__(None, None, None)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"matcond-gpu-{g}{s}.lock" for g in "01" for s in ("", ".slot1")]


def test_visible_ids_name_the_lock_files(tmp_path: Path) -> None:
    """CUDA_VISIBLE_DEVICES=2,3: torch ordinals 0 and 1, locks named after GPUs 2 and 3."""
    with claim(tmp_path, visible="2,3") as first:
        assert first == torch.device("cuda", 0)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["matcond-gpu-2.lock"]
        # A run that sees only GPU 2 must wait for it; one that sees only GPU 3 need not.
        with pytest.raises(TimeoutError):
            with claim(tmp_path, device_count=1, visible="2", timeout=0.1, poll=0.02):
                pass
        with claim(tmp_path, device_count=1, visible="3") as other:
            assert other == torch.device("cuda", 0)


def test_slurm_jobs_lock_only_within_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two SLURM jobs both see CUDA_VISIBLE_DEVICES=0 (SLURM numbers each job's GPUs from 0):
    they hold different GPUs and must not wait for each other."""
    monkeypatch.setenv("SLURM_JOB_ID", "101")
    with claim_device("cuda", device_count=1, visible="0", lock_dir=tmp_path) as one:
        monkeypatch.setenv("SLURM_JOB_ID", "102")
        with claim_device("cuda", device_count=1, visible="0", lock_dir=tmp_path) as two:
            assert one == two == torch.device("cuda", 0)
    assert lock_path(tmp_path, "0", "slurm101").exists()
    assert lock_path(tmp_path, "0", "slurm102").exists()


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from matcond.execution.devices import claim_device

    with claim_device("cuda", device_count=1, visible=None, lock_dir=Path(sys.argv[1]),
                      scope="") as device:
        print(device, flush=True)
        time.sleep(600)
    """
)


def test_a_killed_holder_releases_its_gpu(tmp_path: Path) -> None:
    """SIGKILL gives the holder no chance to clean up; the kernel still drops its lock."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID")}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert holder.stdout.readline().strip() == "cuda:0"
        assert lock_path(tmp_path, "0").read_text().strip() == str(holder.pid)
        with pytest.raises(TimeoutError):  # held by another process
            with claim(tmp_path, device_count=1, timeout=0.2, poll=0.05):
                pass
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        holder.stdout.close()
    assert holder.returncode == -signal.SIGKILL
    with claim(tmp_path, device_count=1, timeout=5, poll=0.05) as device:
        assert device == torch.device("cuda", 0)


@pytest.mark.workflow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_a_cuda_run_without_a_gpu_stops_before_any_job(tmp_path: Path) -> None:
    """A local run with device cuda where torch sees no GPU: one line, the training jobs' own
    error (test_cuda_without_gpu_is_a_clear_error), before any job starts."""
    config = {
        "device": "cuda",
        "defaults": {"epochs": 2, "dim": 4},
        "experiments": {"e": {"seeds": 1}},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    repo = Path(__file__).resolve().parents[2]
    cmd = [SNAKEMAKE, "-s", repo / "Snakefile", "--directory", tmp_path, "--configfile"]
    cmd += [tmp_path / "config.yaml", "--cores", "1", "--resources", "gpu=1"]
    proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Cannot start: config key device is 'cuda' but torch sees no GPU here" in out
    assert "Traceback" not in out
    assert not (tmp_path / "results" / "trials").exists()
