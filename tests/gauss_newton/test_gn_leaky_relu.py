"""One-hidden-layer leaky-ReLU nets: Eq. (10) and the p x p form against autodiff."""

import pytest
import torch
from gn_cases import generator, random_inputs, random_weights, rel
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from matcond.gauss_newton import (
    LeakyReLUNet,
    leaky_relu_gn_matrix,
    leaky_relu_gn_spectrum,
    linear_gn_spectrum,
    network_jacobian,
    reference_gn_spectrum,
)

CASES = [([4, 6, 3], 10), ([4, 6, 3], 30), ([5, 3, 2], 4), ([3, 8, 2], 20), ([1, 4, 1], 5)]


@pytest.mark.parametrize("alpha", [0.0, 0.01, 0.3, 1.0])
@pytest.mark.parametrize(("dims", "n"), CASES)
def test_forms_equal_the_jacobian_grams(dims, n, alpha) -> None:
    weights = random_weights(dims, seed=n)
    x = random_inputs(n, dims[0], seed=n + 1)
    jac = network_jacobian(LeakyReLUNet(weights, alpha), x)
    torch.testing.assert_close(leaky_relu_gn_matrix(weights, x, alpha, form="p"), jac.T @ jac / n)
    torch.testing.assert_close(leaky_relu_gn_matrix(weights, x, alpha, form="nk"), jac @ jac.T / n)


@pytest.mark.parametrize("alpha", [0.0, 0.01, 0.3, 1.0])
@pytest.mark.parametrize(("dims", "n"), CASES)
def test_kappa_matches_the_reference(dims, n, alpha) -> None:
    weights = random_weights(dims, seed=n)
    x = random_inputs(n, dims[0], seed=n + 1)
    reference = reference_gn_spectrum(LeakyReLUNet(weights, alpha), x)
    result = leaky_relu_gn_spectrum(weights, x, alpha)
    assert result.rank == reference.rank
    assert rel(result.kappa, reference.kappa) < 1e-8


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(
    d=st.integers(1, 5),
    m=st.integers(1, 7),
    k=st.integers(1, 4),
    n=st.integers(1, 8),
    seed=st.integers(0, 2**16),
    whiten=st.booleans(),
)
def test_alpha_one_equals_the_linear_net(d, m, k, n, seed, whiten) -> None:
    weights = random_weights([d, m, k], seed)
    x = random_inputs(n, d, seed, whiten=whiten)
    linear = linear_gn_spectrum(weights, x)
    leaky = leaky_relu_gn_spectrum(weights, x, 1.0)
    assume(linear.kappa < 1e5 and leaky.gap_at_cut > 1e8)
    assert leaky.rank == linear.rank
    assert rel(leaky.kappa, linear.kappa) < 1e-8


def test_dead_relu_network_is_rejected() -> None:
    v = -torch.ones(3, 2, dtype=torch.float64)
    w = torch.randn(2, 3, generator=generator(0), dtype=torch.float64)
    x = torch.ones(4, 2, dtype=torch.float64)  # every unit is dead: G_O = 0
    with pytest.raises(ValueError, match="zero"):
        leaky_relu_gn_spectrum([v, w], x, 0.0)
    with pytest.raises(ValueError, match="slope"):
        leaky_relu_gn_spectrum([v, w], x, 1.5)
