"""Target matrices W* and the random streams of a trial.

Every random stream of a trial derives from its seed and the stream's role alone, never from
global state or from other settings, so that two trials with the same seed (e.g. SGD and Adam,
or standard training and multipliers) learn the same target from the same data stream.
"""

from __future__ import annotations

import numpy as np

# Roles of a trial's independent random streams (TEACHER2: the ReLU teacher's second layer;
# the attention teacher's six matrices use TARGET, TEACHER2 and the four after INIT).
TARGET_STREAM, DATA_STREAM, INIT_STREAM, TEACHER2_STREAM = 0, 1, 2, 3
ATTENTION_STREAMS = (TARGET_STREAM, TEACHER2_STREAM, 4, 5, 6, 7)
ATTENTION_LAYERS = ("wq", "wk", "wv", "wo", "w1", "w2")


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


def make_target(spec: dict, stream: int = TARGET_STREAM) -> np.ndarray:
    """The float64 target W* of a trial spec (its structure, dim, seed, structure parameter)."""
    rng = np.random.default_rng(stream_seed(spec["seed"], stream))
    structure, dim = spec["structure"], spec["dim"]
    if structure == "heterogeneous":
        return heterogeneous(dim, rng, spec["row_log_std"])
    if structure == "low_rank":
        return low_rank(dim, rng, spec["rank"])
    if structure == "block_diagonal":
        return block_diagonal(dim, rng, spec["n_blocks"])
    raise ValueError(f"unknown structure {structure!r}")


def make_teacher(spec: dict) -> dict[str, np.ndarray]:
    """The target matrices of a trial by name.

    Linear models learn W* (``product``). The ReLU MLP's teacher is y = W2* relu(W1* x) with
    W1*, W2* two independent draws of the spec's structure; its ``product`` is W2* W1*. The
    attention block's teacher is a block of the same shape whose six matrices are independent
    draws (``attention.{wq,...}``); its recorded matrices are ``qk``, ``ov``, ``mlp1``, ``mlp2``
    (matcond.models.AttentionBlock).
    """
    if spec["model"] == "attention":
        w = {
            name: make_target(spec, stream)
            for name, stream in zip(ATTENTION_LAYERS, ATTENTION_STREAMS, strict=True)
        }
        recorded = {"qk": w["wq"].T @ w["wk"], "ov": w["wo"] @ w["wv"]}
        recorded.update(mlp1=w["w1"].copy(), mlp2=w["w2"].copy())
        return {**recorded, **{f"attention.{k}": v for k, v in w.items()}}
    if spec["model"] != "relu_mlp":
        return {"product": make_target(spec)}
    w1, w2 = make_target(spec), make_target(spec, TEACHER2_STREAM)
    return {"product": w2 @ w1, "layer1": w1, "layer2": w2}
