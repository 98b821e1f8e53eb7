"""How a training block's trials share its job: its device, how many train side by side, and
the host memory that takes. Pure Python (no torch): the Snakefile reads it at parse time for the
training rule's ``mem_mb``, the training job for its batches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BATCH_ELEMENTS = 1 << 18  # chosen by benchmarks/train_floor.py --side (docs/benchmarks.md)
BASE_MB = 1000  # torch itself and the job's own copies (about 300 MB measured), with room

# Per model: the d x d matrices of its teacher (the ``target`` stage), of each other stage a
# trial keeps (``initial``, ``final``, each saved recorded epoch) and its trained layers, as
# functions of the spec (matcond.condition_number.models; tests/condition_number/test_batching.py
# checks them against what a trial holds).
_MATRICES = {
    "linear": lambda spec: (1, 1, 1),
    "deep_linear": lambda spec: (1, spec["depth"] + 1, spec["depth"]),
    "relu_mlp": lambda spec: (3, 3, 2),
    "attention": lambda spec: (10, 4, 6),
}


def block_device(requested: str, dim: int, min_dim: int, gpus: int) -> str:
    """Where a training block of matrices ``dim x dim`` trains for the config's ``device``:
    ``cpu`` and ``cuda`` as asked; ``auto`` on ``cuda`` where ``gpus`` (the GPUs this run
    sees) is not 0 and ``dim >= min_dim`` (config key ``gpu_min_dim``: below it a GPU does not
    gain), else on ``cpu``."""
    if requested not in ("auto", "cpu", "cuda"):
        raise ValueError(f"config key device must be auto, cpu or cuda, not {requested!r}")
    if requested == "auto":
        return "cuda" if gpus and dim >= min_dim else "cpu"
    return requested


# The smallest side whose recorded matrices' float64 singular values a GPU block takes on the
# GPU, batched, rather than with numpy on its host core: 512, the one side measured on a GPU
# (an H100, 2026-11-27: 0.030 s per trial there against 0.108 s on the host; docs/benchmarks.md
# "GPU"). cuSOLVER batches only matrices up to 32 x 32 and loops over larger ones, so small
# sides may well lose; benchmarks/gpu_check.py measures each side.
SPECTRA_ON_DEVICE_MIN_DIM = 512


def device_takes_spectra(dim: int, device: str) -> bool:
    """Whether a block of matrices ``dim x dim`` training on ``device`` takes their singular
    values there (:data:`SPECTRA_ON_DEVICE_MIN_DIM`); on the CPU numpy takes them."""
    return device != "cpu" and dim >= SPECTRA_ON_DEVICE_MIN_DIM


def seeds_side_by_side(dim: int, device: str) -> int:
    """How many of a block's trials train side by side: all of them on a GPU; on the CPU as
    many as keep one layer stack under :data:`BATCH_ELEMENTS` numbers (batching pays at small
    dims, where a step is dominated by per-operation overhead, and costs at large ones)."""
    if device != "cpu":
        return 1 << 30
    return max(1, BATCH_ELEMENTS // dim**2)


def recorded_stages(spec: Mapping[str, Any]) -> int:
    """The recorded epochs whose weights a trial keeps (``save_recorded_weights``): 0, k, 2k,
    ... and the last (matcond.condition_number.training.record_epochs)."""
    if not spec["save_recorded_weights"] or not spec["record_every"]:
        return 0
    epochs, every = spec["epochs"], spec["record_every"]
    return epochs // every + 1 + (epochs % every != 0)


def held_matrices(spec: Mapping[str, Any]) -> tuple[int, int]:
    """``(kept, layers)``: the d x d float64 matrices a trial keeps until its batch ends (its
    target, initial, final and saved recorded weights) and its trained layers."""
    target, stage, layers = _MATRICES[spec["model"]](spec)
    return target + stage * (2 + recorded_stages(spec)), layers


def trial_host_mb(spec: Mapping[str, Any]) -> float:
    """MB of host memory one trial takes while its batch trains: the matrices it keeps, and
    for the training's own state three float64 matrices per layer and one more (an upper
    bound on the peak RSS that benchmarks/block_memory.py measures, docs/benchmarks.md)."""
    kept, layers = held_matrices(spec)
    return 8 * spec["dim"] ** 2 * (kept + 3 * layers + 1) / 1e6


def block_mem_mb(spec: Mapping[str, Any], seeds: int, device: str) -> int:
    """MB a training job of ``seeds`` trials of setting ``spec`` needs on ``device`` (cpu or
    cuda): :data:`BASE_MB` and the trials that train side by side."""
    side_by_side = min(seeds, seeds_side_by_side(spec["dim"], device))
    return BASE_MB + round(side_by_side * trial_host_mb(spec))


# What one CPU thread spends, fitted (non-negative least squares on relative error) to the
# compute seconds of the paper run's 1,146 training blocks at 1d47194 (2026-11-30,
# docs/benchmarks.md "SLURM"): per GEMM flop (the forward and backward products, 4 x rows x
# d^2 per layer and step), per batched step, per recorded layer's d^3 (its float64 SVD) and
# per trial.
_SECONDS_PER_FLOP = 3.8e-11
_SECONDS_PER_STEP = 1.7e-4
_SECONDS_PER_RECORDED_CUBE = 1.1e-10
_SECONDS_PER_TRIAL = 0.01


def block_seconds(spec: Mapping[str, Any], seeds: int) -> float:
    """About how many seconds a block of ``seeds`` trials of setting ``spec`` trains on one CPU
    thread, for sizing training jobs only: on the paper run, 83 % of the blocks within 2x of
    it and the whole run within 10 % (attention blocks take about 3x). Counts the GEMMs, the
    batched steps (:func:`seeds_side_by_side`), the recordings' SVDs and a cost per trial."""
    layers = _MATRICES[spec["model"]](spec)[2]
    dim, steps = spec["dim"], spec["epochs"] * spec["steps_per_epoch"]
    rows = spec["batch_size"] * (spec["seq_len"] if spec["model"] == "attention" else 1)
    every = spec["record_every"]
    records = spec["epochs"] // every + 1 if every else 2
    batches = -(-seeds // seeds_side_by_side(dim, "cpu"))
    per_trial = (
        _SECONDS_PER_FLOP * steps * layers * 4 * rows * dim**2
        + _SECONDS_PER_RECORDED_CUBE * records * layers * dim**3
        + _SECONDS_PER_TRIAL
    )
    return seeds * per_trial + _SECONDS_PER_STEP * steps * batches
