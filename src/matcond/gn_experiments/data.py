"""The GN experiments' inputs: scikit-learn's digits, Gaussian samples, whitening (package
docstring: ``Data``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from matcond.core.gn_data import load_data_file

DIGITS_CLASSES = 10
DIGITS_SCALE = 16.0
Settings = Mapping[str, Any]


def whiten(x: np.ndarray) -> np.ndarray:
    """``U V^T`` from the thin SVD of ``x`` (``n x d``), singular values <= ``max(n, d) eps
    s_max`` dropped: every kept direction gets singular value 1."""
    u, s, vh = np.linalg.svd(np.asarray(x, dtype=np.float64), full_matrices=False)
    keep = s > max(x.shape) * np.finfo(np.float64).eps * s.max()
    return u[:, keep] @ vh[keep]


def subsample(count: int, n: int | None, seed: int) -> np.ndarray:
    """Sorted indices of ``n`` of ``count`` rows drawn without replacement (all rows if None)."""
    if n is None or n >= count:
        return np.arange(count)
    return np.sort(np.random.default_rng(seed).choice(count, size=n, replace=False))


def digits_data(n: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(x, labels)``: digits pixels / 16 without the always-zero pixels, ``n`` rows."""
    from sklearn.datasets import load_digits

    x, labels = load_digits(return_X_y=True)
    x = x[:, (x != 0).any(axis=0)] / DIGITS_SCALE
    rows = subsample(x.shape[0], n, seed)
    return x[rows].astype(np.float64), labels[rows].astype(np.int64)


def digits_images(n: int | None, whitened: bool, seed: int) -> Inputs:
    """The digits on their 8 x 8 grid (all 64 pixels, / 16), ``n`` rows, whitened or not
    (whitening acts on the flattened images: ``U V^T`` keeps the grid shape, not locality)."""
    from sklearn.datasets import load_digits

    x, labels = load_digits(return_X_y=True)
    rows = subsample(x.shape[0], n, seed)
    x = x[rows].astype(np.float64) / DIGITS_SCALE
    return Inputs("digits", whitened, whiten(x) if whitened else x, DIGITS_CLASSES, labels[rows])


def gaussian_data(n: int, d: int, seed: int = 0) -> np.ndarray:
    """``n x d`` samples of ``N(0, I_d)``."""
    return np.random.default_rng(seed).standard_normal((n, d))


@dataclass(frozen=True)
class Inputs:
    """A data set as one sweep sees it: samples in the rows of ``x``, ``outputs`` = ``k``."""

    dataset: str
    whitened: bool
    x: np.ndarray
    outputs: int
    labels: np.ndarray | None = None

    def columns(self) -> dict[str, Any]:
        """The table columns that identify the data."""
        n, d = self.x.shape
        return {
            "dataset": self.dataset,
            "whitened": self.whitened,
            "n_samples": n,
            "d": d,
            "k": self.outputs,
        }


def make_inputs(dataset: str, whitened: bool, n: int | None, data: Settings) -> Inputs:
    """The ``digits``, ``gaussian`` or a user file's inputs (``data["files"]``) with ``n`` rows
    (None: all digits or file rows / the Gaussian default ``data["gaussian"]["n_samples"]``),
    whitened or not, drawn by ``data["seed"]``."""
    if dataset in data.get("files", {}):
        x, y = load_data_file(data["files"][dataset])
        rows = subsample(x.shape[0], n, data["seed"])
        x, y = x[rows], y[rows]
        labels, outputs = (y, int(y.max()) + 1) if y.ndim == 1 else (None, y.shape[1])
    elif dataset == "digits":
        x, labels = digits_data(n, data["seed"])
        outputs = DIGITS_CLASSES
    elif dataset == "gaussian":
        spec = data["gaussian"]
        x = gaussian_data(spec["n_samples"] if n is None else n, spec["dim"], data["seed"])
        labels, outputs = None, spec["outputs"]
    else:
        raise ValueError(
            f"unknown dataset {dataset!r}; use 'digits', 'gaussian' or a key of data.files"
        )
    return Inputs(dataset, whitened, whiten(x) if whitened else x, outputs, labels)


def sweep_inputs(settings: Settings, data: Settings) -> Iterator[Inputs]:
    """Every (dataset, whitened) pair of a sweep's settings."""
    for dataset in settings["datasets"]:
        for whitened in settings["whiten"]:
            yield make_inputs(dataset, whitened, settings.get("n_samples"), data)


def seed_list(seeds: int | Sequence[int]) -> list[int]:
    """A seed count ``n`` means seeds ``0 .. n-1``; a list is taken as is."""
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)
