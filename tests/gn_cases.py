"""Random small networks and data for the Gauss-Newton tests (float64, seeded): tests/gauss_newton
and tests/gn_experiments."""

from __future__ import annotations

import torch
from hypothesis import strategies as st


def generator(seed: int) -> torch.Generator:
    """A seeded CPU generator."""
    return torch.Generator().manual_seed(seed)


def random_weights(
    dims: list[int], seed: int, deficient: tuple[int, int] | None = None
) -> list[torch.Tensor]:
    """``[W_1, ..., W_L]``, ``W_l`` of shape ``dims[l] x dims[l-1]``, entries ``N(0, 1/fan_in)``.

    ``deficient = (l, r)`` makes ``W_l`` (0-based) of rank ``r``.
    """
    gen = generator(seed)
    weights = [
        torch.randn(dims[i + 1], dims[i], generator=gen, dtype=torch.float64) / dims[i] ** 0.5
        for i in range(len(dims) - 1)
    ]
    if deficient is not None:
        index, rank = deficient
        rows, cols = weights[index].shape
        left = torch.randn(rows, rank, generator=gen, dtype=torch.float64)
        weights[index] = left @ torch.randn(rank, cols, generator=gen, dtype=torch.float64) / cols
    return weights


def random_inputs(n: int, d: int, seed: int, whiten: bool = False) -> torch.Tensor:
    """``n x d`` Gaussian samples with per-coordinate scales ``exp(N(0, 1/4))``, or whitened.

    Whitening is the GN paper's ``X -> U V^T`` (thin SVD), so ``Sigma = V V^T / n``.
    """
    gen = generator(seed + 10_000)
    scales = torch.exp(0.5 * torch.randn(d, generator=gen, dtype=torch.float64))
    x = torch.randn(n, d, generator=gen, dtype=torch.float64) * scales
    if whiten:
        u, _, vh = torch.linalg.svd(x, full_matrices=False)
        x = u @ vh
    return x


def rel(a: float, b: float) -> float:
    """``|a - b| / |b|``."""
    return abs(a - b) / abs(b)


@st.composite
def linear_nets(
    draw: st.DrawFn, max_layers: int = 3, wide: bool = False
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Random deep linear nets (sizes <= 6) and data, rank deficiencies and ``n < d`` included.

    ``wide`` imposes the GN paper's assumptions: hidden widths ``m >= max(d, k)``, ``n >= d``,
    full-rank weights.
    """
    num_layers = draw(st.integers(1, max_layers))
    d, k = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    low = max(d, k) if wide else 1
    dims = [d, *[draw(st.integers(low, low + 4)) for _ in range(num_layers - 1)], k]
    seed = draw(st.integers(0, 2**16))
    deficient = None
    if not wide and num_layers > 1 and draw(st.booleans()):
        layer = draw(st.integers(0, num_layers - 1))
        deficient = (layer, draw(st.integers(1, min(dims[layer], dims[layer + 1]))))
    n = draw(st.integers(d, d + 6) if wide else st.integers(1, 8))
    x = random_inputs(n, d, seed, whiten=draw(st.booleans()))
    return random_weights(dims, seed, deficient), x


def assert_bound_holds(bound: float, exact: float) -> None:
    """Fail unless ``bound >= exact`` up to a relative float slack of 1e-10."""
    assert bound >= exact * (1 - 1e-10), f"bound {bound!r} < exact {exact!r}"
