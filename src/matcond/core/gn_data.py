"""A user's data file for the Gauss-Newton sweeps, and the size of the built-in digits: read
by the config's check at parse time (:mod:`matcond.core.config`) and by the sweeps
(:mod:`matcond.gn_experiments.data`)."""

from __future__ import annotations

import numpy as np

DIGITS_ROWS = 1797  # scikit-learn's digits (tests/gn_experiments check it)


def load_data_file(path: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a user's ``.npz``: ``X`` float64 ``n x d`` (finite, ``n >= 1``), ``y``
    ``n`` integer labels (>= 0) or an ``n x k`` array of finite targets. Raises ValueError
    saying what is wrong with the file."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read {path} as a NumPy .npz: {err}") from None
    missing = [key for key in ("X", "y") if key not in arrays]
    if missing:
        raise ValueError(f"{path} has no array {' or '.join(missing)} (it has {sorted(arrays)})")
    x, y = arrays["X"], arrays["y"]
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{path}: X must be n x d with n, d >= 1, not of shape {x.shape}")
    if not (np.issubdtype(x.dtype, np.number) and not np.iscomplexobj(x)):
        raise ValueError(f"{path}: X must hold real numbers, not {x.dtype}")
    if not np.isfinite(x).all():
        raise ValueError(f"{path}: X has {int((~np.isfinite(x)).sum())} non-finite entries")
    if y.shape[:1] != x.shape[:1] or y.ndim not in (1, 2):
        raise ValueError(f"{path}: y must have n = {x.shape[0]} rows (X's), not shape {y.shape}")
    if y.ndim == 1 and not (np.issubdtype(y.dtype, np.integer) and (y >= 0).all()):
        raise ValueError(f"{path}: a 1-D y must hold class labels (integers >= 0), not {y.dtype}")
    if y.ndim == 2 and not (np.issubdtype(y.dtype, np.number) and np.isfinite(y).all()):
        raise ValueError(f"{path}: a 2-D y must hold finite numbers (one target row per sample)")
    return x.astype(np.float64), y
