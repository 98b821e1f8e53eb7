"""Pseudo-condition numbers from eigenvalues: rank choice and eigen-gap at the cut."""

import math

import pytest
import torch

from matcond.gauss_newton import input_covariance, spectrum_from_eigenvalues
from matcond.gauss_newton.spectrum import (
    TOLERANCE,
    gram_floor,
    pseudo_kappa,
    spectrum_from_factor,
)


def test_analytic_rank_and_gap() -> None:
    values = torch.tensor([4.0, 2.0, 1e-3, 1e-15, -1e-16], dtype=torch.float64)
    result = spectrum_from_eigenvalues(values, solver="test", seconds=0.0, rank=3)
    assert (result.kappa, result.rank, result.rank_source) == (4000.0, 3, "analytic")
    assert result.gap_at_cut == pytest.approx(1e12)


def test_tolerance_rank() -> None:
    values = torch.tensor([1e-17, 1.0, 0.5, 0.0], dtype=torch.float64)
    result = spectrum_from_eigenvalues(values, solver="test", seconds=0.0)
    assert (result.rank, result.kappa, result.rank_source) == (2, 2.0, "tolerance")
    assert result.gap_at_cut == pytest.approx(0.5e17)
    assert result.reliable and result.flags() == ""


def test_eigenvalue_at_the_rounding_level_is_flagged() -> None:
    floor = gram_floor(1.0, 4)
    values = torch.tensor([1.0, 0.5, 10 * floor, 0.0], dtype=torch.float64)
    analytic = spectrum_from_eigenvalues(values, solver="test", seconds=0.0, rank=3)
    assert not analytic.resolved and not analytic.reliable
    assert analytic.rank_agrees is False and "resolution" in analytic.flags()
    clear = spectrum_from_eigenvalues(values, solver="test", seconds=0.0)
    assert (clear.rank, clear.kappa) == (2, 2.0) and clear.reliable
    near = torch.tensor([1.0, 0.5, 200 * floor, 50 * floor], dtype=torch.float64)
    cut = spectrum_from_eigenvalues(near, solver="test", seconds=0.0)
    assert cut.rank == 3 and not cut.clear_cut and "ambiguous" in cut.flags()


def test_kappa_is_never_negative() -> None:
    assert pseudo_kappa(1.0, -1e-17) == math.inf and pseudo_kappa(1.0, 0.0) == math.inf
    values = torch.tensor([1.0, -1e-17], dtype=torch.float64)
    result = spectrum_from_eigenvalues(values, solver="test", seconds=0.0, rank=2)
    assert result.kappa == math.inf and not result.reliable
    assert TOLERANCE * result.floor > 0


def test_full_rank_has_infinite_gap_and_zero_is_rejected() -> None:
    result = spectrum_from_eigenvalues(torch.tensor([2.0, 1.0]), solver="t", seconds=0.0)
    assert result.gap_at_cut == math.inf
    with pytest.raises(ValueError, match="zero"):
        spectrum_from_eigenvalues(torch.zeros(3), solver="t", seconds=0.0)


def test_input_covariance_from_samples_and_matrix() -> None:
    x = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    from_x = input_covariance(x)
    from_sigma = input_covariance(sigma=x.T @ x / 3)
    assert from_x.rank == from_sigma.rank == 3
    torch.testing.assert_close(from_x.matrix, x.T @ x / 3)
    torch.testing.assert_close(from_x.sqrt @ from_x.sqrt, from_x.matrix)
    assert from_x.kappa == pytest.approx(from_sigma.kappa, rel=1e-10)
    u, _, vh = torch.linalg.svd(x, full_matrices=False)
    assert input_covariance(u @ vh).is_isotropic() and not from_x.is_isotropic()
    with pytest.raises(ValueError, match="zero"):
        input_covariance(torch.zeros(2, 2))


@pytest.mark.parametrize("shape", [(30, 400), (400, 30), (40, 50)])
def test_factor_spectrum_of_long_and_square_factors_against_known_singular_values(shape):
    # U diag(s) V^T with s from 1 down to 1e-9 and five exact zeros: the kept eigenvalues are
    # s^2 (the QR reduction of long factors must not change them), the zeros are cut
    rows, cols = shape
    gen = torch.Generator().manual_seed(0)
    rank = min(shape) - 5
    u = torch.linalg.qr(torch.randn(rows, rank, dtype=torch.float64, generator=gen)).Q
    v = torch.linalg.qr(torch.randn(cols, rank, dtype=torch.float64, generator=gen)).Q
    s = torch.logspace(0, -9, rank, dtype=torch.float64)
    spectrum = spectrum_from_factor(u @ torch.diag(s) @ v.T, solver="svd", seconds_from=0.0)
    assert spectrum.rank == rank and spectrum.reliable
    assert abs(spectrum.kappa / 1e18 - 1) < 1e-6  # (s_max / s_min)^2
