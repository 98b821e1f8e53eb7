"""GN condition numbers at the edge of float64, against an extended-precision reference.

The reference forms the Jacobian of a tiny network in mpmath from the float64 weights and
data (exactly representable), and diagonalises ``J^T J / n`` (or ``J J^T / n``) with 80
digits: the exact pseudo-condition number of the network as stored. Layers scaled by
1e-6 ... 1e-12, bottleneck widths and badly scaled data push κ to 1e40; every float64 result
must then be either flagged (``reliable`` false) or right to within its own error estimate.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
import torch
from gn_cases import random_inputs, random_weights

from matcond.gauss_newton import linear_gn_spectrum
from matcond.gauss_newton.leaky_relu import leaky_relu_gn_spectrum
from matcond.gauss_newton.spectrum import TOLERANCE

DIGITS = 80


def _mp(tensor: torch.Tensor) -> mp.matrix:
    return mp.matrix([[mp.mpf(float(v)) for v in row] for row in tensor.tolist()])


def _exact(jacobian_rows: list[list], n: int) -> tuple[float, int]:
    """κ and rank of ``J^T J / n`` in extended precision (cut at 1e-50 of the largest)."""
    jac = mp.matrix(jacobian_rows)
    gram = jac.T * jac if jac.cols <= jac.rows else jac * jac.T
    values = sorted((abs(v) for v in mp.eigsy(gram / n, eigvals_only=True)), reverse=True)
    kept = [v for v in values if v > values[0] * mp.mpf(10) ** -50]
    return float(kept[0] / kept[-1]), len(kept)


def exact_linear(weights: list[torch.Tensor], x: torch.Tensor) -> tuple[float, int]:
    """Exact κ of the GN of ``W_L ... W_1 x``: ``d f / d W_l[i, j] = A_l[:, i] h_{l-1}[j]``."""
    with mp.workdps(DIGITS):
        mats, samples = [_mp(w) for w in weights], _mp(x)
        k = mats[-1].rows
        rows = []
        for s in range(samples.rows):
            hidden = [samples[s, :].T]
            for mat in mats[:-1]:
                hidden.append(mat * hidden[-1])
            for out in range(k):
                row = []
                for layer, mat in enumerate(mats):
                    left = mp.eye(k)
                    for later in mats[layer + 1 :][::-1]:
                        left = left * later
                    row += [
                        left[out, i] * hidden[layer][j]
                        for i in range(mat.rows)
                        for j in range(mat.cols)
                    ]
                rows.append(row)
        return _exact(rows, samples.rows)


def exact_leaky(weights: list[torch.Tensor], x: torch.Tensor, alpha: float) -> tuple[float, int]:
    """Exact κ of the GN of ``W phi(V x)`` with the leaky ReLU ``phi`` of slope ``alpha``."""
    with mp.workdps(DIGITS):
        v, w, samples = _mp(weights[0]), _mp(weights[1]), _mp(x)
        rows = []
        for s in range(samples.rows):
            pre = v * samples[s, :].T
            slope = [1 if pre[i] > 0 else mp.mpf(alpha) for i in range(v.rows)]
            hidden = [slope[i] * pre[i] for i in range(v.rows)]
            for out in range(w.rows):
                row = [
                    w[out, i] * slope[i] * samples[s, c]
                    for i in range(v.rows)
                    for c in range(v.cols)
                ]
                row += [hidden[i] if a == out else 0 for a in range(w.rows) for i in range(v.rows)]
                rows.append(row)
        return _exact(rows, samples.rows)


def assert_flagged_or_right(result, exact: float, rank: int) -> None:
    """A reliable result is within its own error estimate (≤ 1 %) and has the exact rank."""
    if not result.reliable:
        assert result.flags(), "an unreliable κ must say why"
        return
    assert result.relative_error <= 1 / TOLERANCE
    assert result.rank == rank
    assert abs(result.kappa - exact) <= (result.relative_error + 1e-12) * exact, (
        result.kappa,
        exact,
        result.relative_error,
    )


LINEAR_CASES = [
    (dims, layer, scale, data_scale)
    for dims in ([3, 4, 2], [3, 1, 2], [4, 2, 4, 3])
    for layer in (0, -1)
    for scale in (1e-6, 1e-9, 1e-12)
    for data_scale in (1.0, 1e-8)
]


@pytest.mark.parametrize(("dims", "layer", "scale", "data_scale"), LINEAR_CASES)
def test_linear_flagged_or_right(dims, layer, scale, data_scale) -> None:
    weights = random_weights(dims, seed=1)
    weights[layer] = weights[layer] * scale
    x = random_inputs(6, dims[0], seed=1)
    x[:, 0] *= data_scale
    exact, rank = exact_linear(weights, x)
    assert_flagged_or_right(linear_gn_spectrum(weights, x), exact, rank)


def test_refinement_resolves_what_the_gram_form_cannot() -> None:
    """κ ≈ 5e23 is beyond any formed Gram matrix (1/eps ≈ 4.5e15) but not beyond the factor."""
    weights = random_weights([3, 1, 2], seed=1)
    weights[0] = weights[0] * 1e-12
    x = random_inputs(6, 3, seed=1)
    exact, rank = exact_linear(weights, x)
    result = linear_gn_spectrum(weights, x)
    assert exact > 1e20 and result.reliable and result.solver == "factor_svd"
    assert_flagged_or_right(result, exact, rank)


def test_beyond_float64_is_flagged() -> None:
    """κ ≈ 3e38: no float64 computation resolves it, and the result must say so."""
    weights = random_weights([3, 1, 2], seed=1)
    weights[-1] = weights[-1] * 1e-12
    x = random_inputs(6, 3, seed=1)
    x[:, 0] *= 1e-8
    exact, _ = exact_linear(weights, x)
    result = linear_gn_spectrum(weights, x)
    assert exact > 1e35 and not result.reliable and "resolution" in result.flags()


@pytest.mark.parametrize("solver", ["lanczos", "arpack"])
def test_iterative_solvers_flagged_or_right(solver: str) -> None:
    weights = random_weights([5, 6, 6, 4], seed=2)
    weights[1] = weights[1] * 1e-6
    x = random_inputs(7, 5, seed=2)
    exact, rank = exact_linear(weights, x)
    assert_flagged_or_right(linear_gn_spectrum(weights, x, solver=solver), exact, rank)


@pytest.mark.parametrize("scale", [1.0, 1e-4, 1e-8])
@pytest.mark.parametrize("alpha", [0.0, 0.2])
def test_leaky_relu_flagged_or_right(scale: float, alpha: float) -> None:
    weights = random_weights([3, 5, 2], seed=3)
    weights[0] = weights[0] * scale
    x = random_inputs(6, 3, seed=3)
    exact, rank = exact_leaky(weights, x, alpha)
    result = leaky_relu_gn_spectrum(weights, x, alpha)
    assert_flagged_or_right(result, exact, rank)
    if scale == 1.0:
        assert result.reliable and np.isfinite(result.kappa)
