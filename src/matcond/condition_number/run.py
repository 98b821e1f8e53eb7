"""Run one trial end to end and write its tidy table and its weights.

Table layout (one row per recorded epoch, matrix and component; documented in docs/outputs.md):
the trial's scalar settings as columns, then ``matrix``, ``epoch``, ``component``, ``trained``,
``target``, ``error``, ``loss``, ``diverged``, ``diverged_epoch``. With ``record_gradients``
the product matrix also gets, per recorded epoch, ``sigma_{i}`` (its i-th singular value
against the target's) and ``grad_sigma_{i}`` (|u_i^T G v_i| for the last step's gradient G of
the loss w.r.t. the product, i.e. |dL/d sigma_i|). The full spec is also kept as JSON in the
parquet metadata under ``matcond.spec``. Nothing time-dependent is written, so the same spec
gives byte-identical files on the CPU.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from safetensors.torch import save_file

from matcond.condition_number.batching import device_takes_spectra, seeds_side_by_side
from matcond.condition_number.components import compare, describe_target, singular_values
from matcond.condition_number.models import teacher_weights
from matcond.condition_number.training import TrainingOutcome, train
from matcond.core.files import (
    SPEC_KEY,
    arrow_table,
    bundled_block_manifest,
    file_record,
    replace_atomically,
    weights_digest,
    weights_metadata,
    write_bundle_manifest,
    write_manifest,
    write_parquet,
)
from matcond.execution.devices import claim_device

RESULT_COLUMNS = [
    "matrix",
    "epoch",
    "component",
    "trained",
    "target",
    "error",
    "loss",
    "diverged",
    "diverged_epoch",
]


def _settings_columns(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if not isinstance(v, list)}


def gradient_signal(weight: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """|u_i^T G v_i| for the singular vectors of ``weight``: the gradient felt by each sigma_i."""
    u, _, vh = np.linalg.svd(weight)
    return np.abs(np.einsum("ji,jk,ik->i", u, gradient, vh))


def _spectrum_rows(weight, s_star, gradient):
    s = singular_values(weight)
    signal = gradient_signal(weight, gradient)
    for i in range(s.size):
        yield (
            f"sigma_{i + 1}",
            s[i],
            s_star[i],
            abs(s[i] - s_star[i]) / s_star[i] if s_star[i] else np.inf,
        )
        yield f"grad_sigma_{i + 1}", signal[i], np.nan, np.nan


class _TrialRecorder:
    """What one trial leaves behind as it trains: its table's rows and the matrices to save."""

    def __init__(self, spec: dict):
        self.spec, self.targets, self.rows = spec, teacher_weights(spec), []
        self.stages, self.described = {"target": self.targets}, {}

    def target(self, name: str):
        """The :func:`describe_target` of matrix ``name``'s target (None without one), once."""
        if name not in self.described:
            target = self.targets.get(name)
            self.described[name] = None if target is None else describe_target(target)
        return self.described[name]

    def record(self, epoch: int, matrices: dict, loss: float, gradient, spectra) -> None:
        """matcond.condition_number.training.RecordFn for this trial: its components at
        ``epoch`` (from ``spectra``, the matrices' singular values, where training gave them)."""
        spec = self.spec
        if spec["save_recorded_weights"]:  # copies: epoch 0's matrices are also ``initial``
            self.stages[f"epoch{epoch}"] = {name: w.copy() for name, w in matrices.items()}
        for name, weight in matrices.items():
            comparisons = compare(
                weight,
                self.target(name),
                effective_rank_thresholds=spec["effective_rank_thresholds"],
                rank_rtol=spec["rank_rtol"],
                spectrum=None if spectra is None else spectra[name],
            )
            self.rows.extend(
                (name, epoch, c.component, c.trained, c.target, c.error, loss) for c in comparisons
            )
        if gradient is not None:
            target_s = self.target("product").singular_values
            spectrum = _spectrum_rows(matrices["product"], target_s, gradient)
            self.rows.extend(("product", epoch, *row, loss) for row in spectrum)

    def result(self, outcome: TrainingOutcome) -> tuple[dict[str, list], dict[str, np.ndarray]]:
        """The trial's tidy table as columns, and its weights by ``{stage}.{matrix}``."""
        n = len(self.rows)
        recorded = list(zip(*self.rows, strict=True)) or [()] * 7
        columns = {k: [v] * n for k, v in _settings_columns(self.spec).items()}
        columns |= {k: list(v) for k, v in zip(RESULT_COLUMNS[:7], recorded, strict=True)}
        if outcome.diverged:  # nothing a diverged net computes is comparable, finite or not
            after = np.asarray(columns["epoch"]) >= outcome.diverged_epoch
            for name in ("trained", "error"):
                columns[name] = list(np.where(after, np.nan, np.asarray(columns[name], float)))
        columns["diverged"] = [outcome.diverged] * n
        columns["diverged_epoch"] = [outcome.diverged_epoch] * n
        stages = self.stages | {"initial": outcome.initial, "final": outcome.final}
        weights = {f"{st}.{name}": w for st, mats in stages.items() for name, w in mats.items()}
        return columns, weights


def run_trials(
    specs: list[dict], device: torch.device, spectra_on_device: bool | None = None
) -> tuple[pd.DataFrame, list[dict[str, np.ndarray]]]:
    """Train the trials of one setting side by side (matcond.condition_number.training.train) and
    compare every recorded matrix with its target. The recorded matrices' singular values are
    computed on ``device`` for the whole batch at once with ``spectra_on_device`` (by default
    :func:`matcond.condition_number.batching.device_takes_spectra`), else with numpy on the host.

    Returns the trials' tidy tables as one, each trial's rows together in the order of
    ``specs`` (:func:`trial_rows`), and per spec the weights to save, keyed
    ``{stage}.{matrix}`` with stage ``target``, ``initial``, ``final`` and, with
    ``save_recorded_weights``, ``epoch{e}`` for every recorded epoch ``e``. One table for all:
    building and converting a table costs per column far more than per row.
    """
    recorders = [_TrialRecorder(spec) for spec in specs]
    targets = [r.targets for r in recorders]
    if spectra_on_device is None:
        spectra_on_device = device_takes_spectra(specs[0]["dim"], device.type)
    outcomes = train(
        specs, targets, device, lambda i, *args: recorders[i].record(*args), spectra_on_device
    )
    results = [r.result(o) for r, o in zip(recorders, outcomes, strict=True)]
    columns = {k: [v for trial, _ in results for v in trial[k]] for k in results[0][0]}
    columns["diverged_epoch"] = pd.array(columns["diverged_epoch"], dtype="Int64")
    return pd.DataFrame(columns), [weights for _, weights in results]


def run_trial(spec: dict, device: torch.device) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """One trial alone: :func:`run_trials` of ``[spec]``."""
    table, weights = run_trials([spec], device)
    return table, weights[0]


def trial_rows(seeds: np.ndarray) -> dict[int, slice]:
    """Where each trial is in a table of :func:`run_trials` whose ``seed`` column is ``seeds``
    (a trial's rows are contiguous), by seed."""
    starts = np.flatnonzero(np.r_[True, seeds[1:] != seeds[:-1]])
    stops = np.r_[starts[1:], len(seeds)]
    return {int(seeds[a]): slice(int(a), int(b)) for a, b in zip(starts, stops, strict=True)}


def write_table(table, spec: dict, path: str | Path) -> None:
    """Write the tidy table (pandas or arrow) as checksummed parquet (atomically), the spec in
    its metadata."""
    write_parquet(table, path, {SPEC_KEY: json.dumps(spec, sort_keys=True)})


def write_weights(weights: dict[str, np.ndarray], spec: dict, path: str | Path) -> None:
    """Write the weights as float64 safetensors (atomically), with the spec and the digest of
    the values (:func:`matcond.core.files.weights_digest`) in its metadata."""
    arrays = {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in weights.items()}
    tensors = {k: torch.from_numpy(v) for k, v in arrays.items()}
    meta = weights_metadata(spec, weights_digest(arrays))
    replace_atomically(path, lambda p: save_file(tensors, str(p), metadata=meta))


BENCHMARK_COLUMNS = ["s", "h:m:s", "max_rss", "cpu_time", "compute_s"]


def write_benchmark(path: str | Path, wall: float, compute: float) -> None:
    """The job's own benchmark, in Snakemake's format (seconds, max RSS in MB, CPU seconds)
    plus ``compute_s``, the seconds spent training: measured in the process that did the work,
    which for a block served by the job server is not the job's process that Snakemake sees."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    hours, rest = divmod(int(wall), 3600)
    values = [
        f"{wall:.4f}",
        f"{hours}:{rest // 60:02d}:{rest % 60:02d}",
        f"{usage.ru_maxrss / 1024:.2f}",
        f"{usage.ru_utime + usage.ru_stime:.2f}",
        f"{compute:.4f}",
    ]
    Path(path).write_text("\t".join(BENCHMARK_COLUMNS) + "\n" + "\t".join(values) + "\n")


def trial_spec(cell: dict, seed: int) -> dict:
    """The canonical spec of the trial of setting ``cell`` with ``seed`` (keys sorted, as
    :class:`matcond.core.trials.Trial` holds it): what its table and weights store."""
    return json.loads(json.dumps({**cell, "seed": seed}, sort_keys=True))


def run_block_job(
    block_json: str, manifest: str, threads: int, device: str, benchmark: str, gpu_jobs: int = 1
) -> None:
    """What one training job does (:mod:`matcond.jobs.train`), in its own process or a job
    server's child: train a block's trials, or each block of a bundle's
    (``block_json`` a :func:`matcond.core.trials.bundle_request`) in turn.

    ``block_json``: the block's setting (``spec``, without seed), its ``seeds`` and the seeds
    whose weights are saved (``save_weights``). Each trial's table, and its weights if saved,
    go beside ``manifest`` (``seed{s}.parquet``, ``seed{s}.safetensors``) as soon as it is
    trained; then the manifest (:func:`matcond.core.files.write_manifest`) and the block's
    benchmark (:func:`write_benchmark`). Each trial runs with ``threads`` torch threads on
    ``device``, the block's (``cpu`` or ``cuda``: one of ``gpu_jobs`` slots of a GPU is claimed
    for the job's lifetime, :mod:`matcond.execution.devices`), from its own generators, so its
    files are the same bytes in any block, bundle and batch on the CPU (tested); on a GPU its
    draws are too, and whether its numbers are is what ``benchmarks/gpu_check.py`` checks
    (cuBLAS may pick other kernels for other batch sizes). A bundle's blocks
    write their manifests where their own jobs would (results/trials/{block}.json), then the
    bundle's ``manifest`` (:func:`matcond.core.files.write_bundle_manifest`).
    """
    start = time.perf_counter()
    request = json.loads(block_json)
    torch.set_num_threads(threads)  # fixed thread count: identical bits on any --cores
    compute, trials = 0.0, 0
    with claim_device(device, slots=gpu_jobs) as torch_device:
        if "blocks" not in request:
            compute, trials = _train_block(request, Path(manifest), torch_device)
        else:
            for path, block in request["blocks"].items():
                block_manifest = bundled_block_manifest(manifest, path)
                seconds, count = _train_block(block, block_manifest, torch_device)
                compute, trials = compute + seconds, trials + count
            write_bundle_manifest(manifest, request)
    print(
        f"device={torch_device} trials={trials} compute_seconds={compute:.3f}",
        file=sys.stderr,
    )
    write_benchmark(benchmark, time.perf_counter() - start, compute)


def _train_block(block: dict, manifest: Path, torch_device: torch.device) -> tuple[float, int]:
    """Train one block (a block request) on ``torch_device`` and write its files and its
    ``manifest`` (:func:`run_block_job`); the seconds spent computing, and its trials."""
    directory = manifest.parent
    directory.mkdir(parents=True, exist_ok=True)
    records, compute = {}, 0.0
    seeds = block["seeds"]
    size = seeds_side_by_side(block["spec"]["dim"], torch_device.type)
    for first in range(0, len(seeds), size):
        specs = [trial_spec(block["spec"], seed) for seed in seeds[first : first + size]]
        compute_start = time.perf_counter()
        table, weights = run_trials(specs, torch_device)
        compute += time.perf_counter() - compute_start
        arrow, where = arrow_table(table), trial_rows(table["seed"].to_numpy())
        for spec, trial_weights in zip(specs, weights, strict=True):
            seed, rows = spec["seed"], where[spec["seed"]]
            files = [f"seed{seed}.parquet"]
            write_table(arrow.slice(rows.start, rows.stop - rows.start), spec, directory / files[0])
            if seed in block["save_weights"]:
                files.append(f"seed{seed}.safetensors")
                write_weights(trial_weights, spec, directory / files[1])
            epoch = table["diverged_epoch"].iloc[rows.start]
            records[f"seed{seed}"] = {
                "diverged_epoch": None if pd.isna(epoch) else int(epoch),
                "files": {name: file_record(directory / name) for name in files},
            }
    write_manifest(manifest, block, records, torch_device.type)
    return compute, len(records)
