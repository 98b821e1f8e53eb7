"""Inputs the GN library cannot give a condition number for are refused with a ValueError
that names the input (issue 31), never an IndexError or a LinAlgError about conditioning."""

import numpy as np
import pytest

from matcond.gauss_newton import (
    leaky_relu_gn_spectrum,
    lemma2_bound,
    linear_gn_spectrum,
    residual_gn_spectrum,
)

D = 6
GEN = np.random.default_rng(0)
WEIGHTS = [GEN.standard_normal((D, D)) for _ in range(2)]
X = GEN.standard_normal((40, D))


def with_entry(array, value):
    out = array.copy()
    out.flat[3] = value
    return out


@pytest.mark.parametrize("solver", ["auto", "dense", "lanczos", "arpack"])
def test_zero_weights_have_no_condition_number(solver):
    with pytest.raises(ValueError, match="rank 0 .* zero"):
        linear_gn_spectrum([np.zeros((D, D))] * 2, X, solver=solver)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: linear_gn_spectrum([with_entry(WEIGHTS[0], np.nan), WEIGHTS[1]], X),
            r"weights\[0\]",
        ),
        (
            lambda: linear_gn_spectrum([WEIGHTS[0], with_entry(WEIGHTS[1], np.inf)], X),
            r"weights\[1\]",
        ),
        (lambda: linear_gn_spectrum(WEIGHTS, with_entry(X, np.inf)), "^x has 1 non-finite"),
        (lambda: linear_gn_spectrum(WEIGHTS, sigma=np.full((D, D), np.nan)), "^sigma has"),
        (lambda: residual_gn_spectrum(WEIGHTS, 1.0, with_entry(X, np.nan)), "^x has"),
        (
            lambda: leaky_relu_gn_spectrum([with_entry(WEIGHTS[0], np.nan), WEIGHTS[1]], X, 0.1),
            r"weights\[0\]",
        ),
        (lambda: lemma2_bound(WEIGHTS, with_entry(X, -np.inf)), "^x has"),
        (lambda: linear_gn_spectrum([WEIGHTS[0] * 1e200, WEIGHTS[1]], X), "overflow float64"),
    ],
)
def test_non_finite_inputs_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_covariance_must_be_symmetric_and_positive_semidefinite():
    with pytest.raises(ValueError, match="sigma is not symmetric"):
        linear_gn_spectrum(WEIGHTS, sigma=np.triu(np.ones((D, D))) + np.eye(D))
    with pytest.raises(ValueError, match="sigma is not positive semi-definite"):
        linear_gn_spectrum(WEIGHTS, sigma=np.diag([1.0] * (D - 1) + [-1.0]))
    # rounding of a computed X^T X / n is neither
    sigma = X.T @ X / len(X)
    sigma[0, 1] *= 1 + 1e-14
    assert np.isfinite(linear_gn_spectrum(WEIGHTS, sigma=sigma).kappa)
