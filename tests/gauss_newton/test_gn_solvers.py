"""Eigen-solvers against dense eigvalsh: Lanczos, ARPACK, block diagonalisation, Kronecker sums."""

import pytest
import torch
from gn_cases import generator, rel

from matcond.gauss_newton.solvers import (
    arpack_extremes,
    block_diag_eigenvalues,
    dense_eigenvalues,
    kronecker_sum_extremes,
    lanczos_extremes,
    largest_eigenvalue_estimate,
)

CPU = torch.device("cpu")


def _psd(n: int, seed: int, cond: float = 1e3) -> torch.Tensor:
    q = torch.linalg.qr(torch.randn(n, n, generator=generator(seed), dtype=torch.float64))[0]
    values = torch.logspace(0, torch.log10(torch.tensor(cond)).item(), n, dtype=torch.float64)
    return q @ torch.diag(values) @ q.T


@pytest.mark.parametrize("extremes", [lanczos_extremes, arpack_extremes])
@pytest.mark.parametrize("dim", [5, 40, 120])
def test_lanczos_matches_dense(extremes, dim: int) -> None:
    matrix = _psd(dim, seed=dim)
    values = dense_eigenvalues(matrix)
    found = extremes(lambda v: matrix @ v, dim, CPU)
    top, bottom = found.top, found.bottom
    assert found.converged and found.residual < 1e-9
    assert rel(top, float(values[-1])) < 1e-10
    assert rel(bottom, float(values[0])) < 1e-9


def test_lanczos_breakdown_on_few_distinct_eigenvalues() -> None:
    diag = torch.tensor([1.0, 2.0, 5.0] * 20, dtype=torch.float64)
    found = lanczos_extremes(lambda v: diag * v, 60, CPU)
    assert (found.top, found.bottom) == pytest.approx((5.0, 1.0), rel=1e-12) and found.converged


@pytest.mark.parametrize("extremes", [lanczos_extremes, arpack_extremes])
def test_out_of_steps_is_marked_not_converged(extremes) -> None:
    matrix = _psd(200, seed=1, cond=1e6)
    limit = {"max_steps": 3} if extremes is lanczos_extremes else {"maxiter": 1}
    found = extremes(lambda v: matrix @ v, 200, CPU, **limit)
    assert not found.converged and found.residual > 1e-10


def test_block_diag_matches_dense_kron() -> None:
    a, b, c = _psd(4, 1), _psd(5, 2), _psd(5, 3)
    expected = dense_eigenvalues(torch.kron(a, b) + torch.kron(torch.eye(4, dtype=a.dtype), c))
    ours = torch.sort(block_diag_eigenvalues(a, b, c, max_batch_bytes=8 * 25 * 3)).values
    torch.testing.assert_close(ours, expected)


@pytest.mark.parametrize(("rank_a", "rank_c"), [(4, 5), (2, 5), (4, 3), (2, 3), (0, 3)])
def test_kronecker_sum_extremes(rank_a: int, rank_c: int) -> None:
    a = torch.diag(torch.tensor([0.0] * (4 - rank_a) + [1.5, 2.0, 3.0, 4.0][4 - rank_a :]))
    c = torch.diag(torch.tensor([0.0] * (5 - rank_c) + [0.5, 0.7, 1.0, 2.0, 9.0][5 - rank_c :]))
    a, c = a.double(), c.double()
    full = dense_eigenvalues(
        torch.kron(a, torch.eye(5).double()) + torch.kron(torch.eye(4).double(), c)
    )
    nonzero = full[full > 1e-12]
    lam_max, lam_min, rank, dropped = kronecker_sum_extremes(
        dense_eigenvalues(a), dense_eigenvalues(c), rank_a, rank_c
    )
    assert (lam_max, lam_min, rank) == (float(nonzero.max()), float(nonzero.min()), len(nonzero))
    assert dropped == 0.0


def test_power_iteration_estimate() -> None:
    matrix = _psd(30, seed=4, cond=10.0)
    estimate = largest_eigenvalue_estimate(lambda v: matrix @ v, 30, CPU, iterations=200)
    assert rel(estimate, float(dense_eigenvalues(matrix)[-1])) < 1e-6
    assert largest_eigenvalue_estimate(lambda v: v, 0, CPU) == 0.0
