"""Conversion of user inputs (torch tensors or numpy arrays) to float64 torch tensors, and
the small matrix helpers the solvers share."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

ArrayLike = torch.Tensor | np.ndarray


def device_of(*arrays: ArrayLike | Sequence[ArrayLike] | None) -> torch.device:
    """The device of the first torch tensor among ``arrays`` (nested one level), else CPU."""
    for item in arrays:
        candidates = item if isinstance(item, list | tuple) else [item]
        for array in candidates:
            if isinstance(array, torch.Tensor):
                return array.device
    return torch.device("cpu")


def as_float64(array: ArrayLike, device: torch.device, name: str | None = None) -> torch.Tensor:
    """A detached float64 copy (or view) of ``array`` on ``device``. With ``name`` (a user's
    input), non-finite entries are a ValueError that names it."""
    tensor = torch.as_tensor(array).detach().to(device=device, dtype=torch.float64)
    if name is not None and not bool(torch.isfinite(tensor).all()):
        bad = int((~torch.isfinite(tensor)).sum())
        raise ValueError(f"{name} has {bad} non-finite entries (NaN or inf) of {tensor.numel()}")
    return tensor


def as_float64_list(
    arrays: Sequence[ArrayLike], device: torch.device, name: str | None = None
) -> list[torch.Tensor]:
    """:func:`as_float64` applied to every array of a sequence (named ``name[i]``)."""
    return [
        as_float64(array, device, None if name is None else f"{name}[{i}]")
        for i, array in enumerate(arrays)
    ]


def matrix_rank(matrix: torch.Tensor) -> int:
    """Numerical rank with the standard tolerance ``max(rows, cols) * eps * sigma_max``."""
    if matrix.numel() == 0:
        return 0
    return int(torch.linalg.matrix_rank(matrix))


def symmetric(matrix: torch.Tensor) -> torch.Tensor:
    """``(M + M^T) / 2`` (of each matrix of a batch): exactly symmetric, and ``M`` itself, bit
    for bit, if ``M`` was."""
    return (matrix + matrix.mT) / 2
