"""Target matrices W* and the random streams of a trial.

Every random stream of a trial derives from its seed and the stream's role alone, never from
global state or from other settings, so that two trials with the same seed (e.g. SGD and Adam,
or standard training and multipliers) learn the same target from the same data stream.
"""

from __future__ import annotations

import numpy as np

# Roles of a trial's independent random streams (TEACHER2: a teacher's second matrix; the
# attention teacher's six matrices use TARGET, TEACHER2 and 4-7, matcond.condition_number.models).
TARGET_STREAM, DATA_STREAM, INIT_STREAM, TEACHER2_STREAM = 0, 1, 2, 3


def stream_seed(seed: int, stream: int) -> int:
    """A 63-bit seed for one random stream of a trial."""
    state = np.random.SeedSequence([seed, stream]).generate_state(2, np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1


def heterogeneous(dim: int, rng: np.random.Generator, row_log_std: float) -> np.ndarray:
    """G / sqrt(dim) with row i scaled by exp(z_i), z_i ~ N(0, row_log_std^2)."""
    g = rng.standard_normal((dim, dim)) / np.sqrt(dim)
    return np.exp(row_log_std * rng.standard_normal(dim))[:, None] * g


def low_rank(dim: int, rng: np.random.Generator, rank: int) -> np.ndarray:
    """A B^T / sqrt(dim * rank) with A, B of shape dim x rank: entries of variance 1/dim."""
    a = rng.standard_normal((dim, rank))
    b = rng.standard_normal((dim, rank))
    return a @ b.T / np.sqrt(dim * rank)


def block_diagonal(dim: int, rng: np.random.Generator, n_blocks: int) -> np.ndarray:
    """Gaussian blocks on the diagonal (sizes as equal as possible), entries of variance 1/size."""
    w = np.zeros((dim, dim))
    start = 0
    for size in (len(part) for part in np.array_split(np.arange(dim), n_blocks)):
        w[start : start + size, start : start + size] = rng.standard_normal((size, size)) / np.sqrt(
            size
        )
        start += size
    return w


# Target structures: how each draws W* (dim, rng, spec) -> matrix; the schema's enum lists them.
STRUCTURES = {
    "heterogeneous": lambda dim, rng, spec: heterogeneous(dim, rng, spec["row_log_std"]),
    "low_rank": lambda dim, rng, spec: low_rank(dim, rng, spec["rank"]),
    "block_diagonal": lambda dim, rng, spec: block_diagonal(dim, rng, spec["n_blocks"]),
}


def make_target(spec: dict, stream: int = TARGET_STREAM) -> np.ndarray:
    """The float64 target W* of a trial spec (its structure, dim, seed, structure parameter)."""
    rng = np.random.default_rng(stream_seed(spec["seed"], stream))
    return STRUCTURES[spec["structure"]](spec["dim"], rng, spec)
