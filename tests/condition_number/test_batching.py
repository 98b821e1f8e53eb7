"""How a block's trials share its job (matcond.condition_number.batching): the matrices the
memory model counts are those a trial keeps, for every model, and mem_mb follows the trials
that train side by side."""

import pytest
import torch

from matcond.condition_number.batching import (
    BASE_MB,
    SPECTRA_ON_DEVICE_MIN_DIM,
    block_device,
    block_mem_mb,
    device_takes_spectra,
    held_matrices,
    recorded_stages,
    seeds_side_by_side,
    trial_host_mb,
)
from matcond.condition_number.models import MODELS
from matcond.condition_number.run import run_trials
from matcond.condition_number.training import build_model, record_epochs
from matcond.core.config import validate_config

DEFAULTS = validate_config({"experiments": {"x": {"seeds": 1}}})["defaults"]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_matrices_counted_are_those_a_trial_keeps(model):
    """Every model of the registry (a new one without its entry fails here): the d x d
    matrices of a trial's weights (target, initial, final, saved recorded epochs) and its
    trained layers (its parameters, in d x d matrices)."""
    dim = 4
    spec = {**DEFAULTS, "model": model, "depth": 3, "dim": dim, "epochs": 3, "seed": 0}
    spec |= {"record_every": 2, "save_recorded_weights": True}
    _, (weights,) = run_trials([spec], torch.device("cpu"))
    assert all(w.shape == (dim, dim) for w in weights.values())
    parameters = sum(p.numel() for p in build_model([spec], torch.device("cpu")).parameters())
    assert held_matrices(spec) == (len(weights), parameters // dim**2)


@pytest.mark.parametrize(("epochs", "every"), [(4, 1), (5, 2), (6, 3), (7, 10), (3, 0)])
def test_recorded_stages_are_the_recorded_epochs(epochs, every):
    spec = {"epochs": epochs, "record_every": every, "save_recorded_weights": True}
    expected = len(record_epochs(epochs, every)) if every else 0
    assert recorded_stages(spec) == expected
    assert recorded_stages({**spec, "save_recorded_weights": False}) == 0


def test_mem_mb_follows_the_trials_trained_side_by_side():
    """On a GPU a block's seeds train as one batch: mem_mb grows with them (measured for
    issue 45: 3,292 MB of host memory for 64 linear trials at d = 1024, where one trial's
    mem_mb of 1,067 MB was asked); on the CPU trials of d >= 512 train one at a time."""
    spec = {**DEFAULTS, "dim": 1024}
    assert seeds_side_by_side(1024, "cpu") == seeds_side_by_side(512, "cpu") == 1
    assert seeds_side_by_side(256, "cpu") == 4 and seeds_side_by_side(8, "cpu") == 4096
    assert block_mem_mb(spec, 64, "cpu") == block_mem_mb(spec, 1, "cuda")
    assert block_mem_mb(spec, 64, "cuda") == BASE_MB + round(64 * trial_host_mb(spec))
    assert block_mem_mb(spec, 64, "cuda") > 3292 and block_mem_mb(spec, 15, "cuda") > 1050
    small = {**DEFAULTS, "dim": 8}
    assert block_mem_mb(small, 64, "cpu") == BASE_MB + round(64 * trial_host_mb(small))


@pytest.mark.parametrize(
    ("requested", "dim", "gpus", "expected"),
    [
        ("auto", 512, 1, "cuda"),  # at gpu_min_dim and above: the GPU
        ("auto", 511, 1, "cpu"),  # below: the CPU
        ("auto", 4096, 0, "cpu"),  # no GPU seen: the CPU at any size
        ("cpu", 4096, 1, "cpu"),  # asked for: as asked
        ("cuda", 8, 0, "cuda"),  # (claim_device then says there is none)
    ],
)
def test_a_block_s_device(requested: str, dim: int, gpus: int, expected: str) -> None:
    assert block_device(requested, dim, 512, gpus) == expected


def test_an_unknown_block_device_names_the_key() -> None:
    with pytest.raises(ValueError, match="config key device must be auto, cpu or cuda"):
        block_device("tpu", 8, 512, 1)


@pytest.mark.parametrize(
    ("dim", "device", "expected"),
    [
        (SPECTRA_ON_DEVICE_MIN_DIM, "cuda", True),  # where a GPU was measured to gain
        (SPECTRA_ON_DEVICE_MIN_DIM - 1, "cuda", False),  # below: numpy on the host
        (4096, "cpu", False),  # a CPU block: numpy, whatever the size
    ],
)
def test_where_a_block_takes_its_singular_values(dim: int, device: str, expected: bool) -> None:
    assert device_takes_spectra(dim, device) is expected
