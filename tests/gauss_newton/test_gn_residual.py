"""Linear residual nets (skip weight beta) against the autodiff Jacobian."""

import pytest
from gn_cases import random_inputs, random_weights, rel

from matcond.gauss_newton import (
    LinearNet,
    linear_gn_spectrum,
    reference_gn_spectrum,
    residual_gn_spectrum,
)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize(
    ("dims", "n", "whiten"),
    [
        ([4, 6, 6, 3], 20, False),
        ([4, 4, 4, 4], 20, True),
        ([5, 5, 5], 3, False),
        ([3, 5, 2], 9, True),
    ],
)
def test_residual_matches_the_jacobian(dims, n, whiten, beta) -> None:
    weights = random_weights(dims, seed=n)
    x = random_inputs(n, dims[0], seed=n + 1, whiten=whiten)
    reference = reference_gn_spectrum(LinearNet(weights, beta=beta), x)
    for solver in ["dense", "lanczos", "arpack"]:
        result = residual_gn_spectrum(weights, beta, x, solver=solver)
        assert result.rank == reference.rank
        assert rel(result.kappa, reference.kappa) < 1e-8


def test_beta_zero_is_the_linear_net() -> None:
    weights = random_weights([4, 6, 6, 3], seed=1)
    x = random_inputs(10, 4, seed=2)
    assert residual_gn_spectrum(weights, 0.0, x).kappa == linear_gn_spectrum(weights, x).kappa
