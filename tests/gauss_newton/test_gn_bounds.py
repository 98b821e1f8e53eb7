"""Upper bounds: never below the exact value, tight where the theory says so."""

import math

import pytest
import torch
from gn_cases import assert_bound_holds, linear_nets, random_inputs, random_weights, rel
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from matcond.gauss_newton import (
    BoundResult,
    input_covariance,
    leaky_relu_bound,
    leaky_relu_gn_spectrum,
    lemma1_bound,
    lemma2_bound,
    linear_gn_spectrum,
    residual_bound,
    residual_gn_spectrum,
)

PROPERTY = settings(max_examples=80, deadline=None, derandomize=True, database=None)


@PROPERTY
@given(linear_nets())
def test_lemma2_bounds_hold(net) -> None:
    weights, x = net
    exact = linear_gn_spectrum(weights, x, solver="dense")
    convex = lemma2_bound(weights, x, form="convex")
    loose = lemma2_bound(weights, x, form="max")
    assert_bound_holds(convex.value, exact.kappa)
    assert_bound_holds(loose.value, convex.value)
    if len(weights) == 2:
        lemma1 = lemma1_bound(weights, x)
        assert_bound_holds(lemma1.value, exact.kappa)
        assert lemma1.value == convex.value or rel(lemma1.value, convex.value) < 1e-12


@PROPERTY
@given(linear_nets(wide=True))
def test_lemma2_is_finite_under_the_papers_assumptions(net) -> None:
    """m >= max(d, k), n >= d, full-rank weights: every alpha_l > 0 and the bound is finite."""
    weights, x = net
    exact = linear_gn_spectrum(weights, x)
    for form in ("convex", "max"):
        bound = lemma2_bound(weights, x, form=form)
        assert math.isfinite(bound.value)
        assert_bound_holds(bound.value, exact.kappa)
        assert bound.tightness(exact) >= 1 - 1e-10
    gammas = lemma2_bound(weights, x).components["gamma"]
    assert abs(sum(gammas) - 1) < 1e-12


@PROPERTY
@given(linear_nets(), st.floats(0.0, 2.0))
def test_residual_bounds_hold(net, beta) -> None:
    weights, x = net
    exact = residual_gn_spectrum(weights, beta, x, solver="dense")
    convex = residual_bound(weights, beta, x, form="convex")
    assert_bound_holds(convex.value, exact.kappa)
    assert_bound_holds(residual_bound(weights, beta, x, form="max").value, convex.value)
    assert convex.components["beta"] == beta


@st.composite
def leaky_nets(draw: st.DrawFn) -> tuple[list[torch.Tensor], torch.Tensor, float]:
    """One-hidden-layer nets with n <= d and m >= max(n, k) half the time (finite Lemma 4)."""
    d, k = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**16))
    if draw(st.booleans()):
        n = draw(st.integers(1, d))
        m = draw(st.integers(max(n, k), max(n, k) + 4))
    else:
        n, m = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    alpha = draw(st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]) | st.floats(0.0, 1.0))
    x = random_inputs(n, d, seed, whiten=draw(st.booleans()))
    return random_weights([d, m, k], seed), x, alpha


@PROPERTY
@given(leaky_nets())
def test_lemma4_holds(net) -> None:
    weights, x, alpha = net
    bound = leaky_relu_bound(weights, x, alpha)
    try:
        exact = leaky_relu_gn_spectrum(weights, x, alpha)
    except ValueError:  # every unit dead: G_O = 0, nothing to bound
        assume(False)
    assert_bound_holds(bound.value, exact.kappa)
    if math.isfinite(bound.value):
        assert exact.rank == x.shape[0] * weights[1].shape[0], "a finite bound means K is PD"


def test_lemma4_is_finite_in_a_typical_case() -> None:
    weights = random_weights([8, 10, 3], seed=0)
    x = random_inputs(6, 8, seed=1)
    exact = leaky_relu_gn_spectrum(weights, x, 0.01)
    bound = leaky_relu_bound(weights, x, 0.01)
    assert math.isfinite(bound.value)
    assert bound.tightness(exact) >= 1


@PROPERTY
@given(
    d=st.integers(1, 6),
    k=st.integers(1, 6),
    extra=st.integers(0, 4),
    n_extra=st.integers(0, 6),
    seed=st.integers(0, 2**16),
)
def test_kronecker_sum_closed_form_and_lemma1_are_tight_on_whitened_data(
    d, k, extra, n_extra, seed
) -> None:
    """Whitened, m >= max(d, k): G = A (+) C exactly, and Lemma 1 holds with equality."""
    weights = random_weights([d, max(d, k) + extra, k], seed)
    x = random_inputs(d + n_extra, d, seed, whiten=True)
    closed = linear_gn_spectrum(weights, x, solver="closed_form")
    dense = linear_gn_spectrum(weights, x, solver="dense")
    assume(dense.kappa < 1e6)
    assert rel(closed.kappa, dense.kappa) < 1e-9
    assert rel(lemma1_bound(weights, x).tightness(closed), 1.0) < 1e-10


def test_a_violated_bound_is_detected() -> None:
    """Negative control: reading sigma_min as the smallest singular value breaks Lemma 1.

    With m = 2 < d = 4 the naive ``kappa(Sigma) (s_max^2(W) + s_max^2(V)) / (s_min^2(W) +
    s_min^2(V))`` (s_min over min(m, d) singular values) lies below the exact value, and the
    check used by every property test fails on it; our reading gives ``inf``.
    """
    weights = random_weights([4, 2, 3], seed=0)
    x = random_inputs(20, 4, seed=0)
    exact = linear_gn_spectrum(weights, x).kappa
    sv, sw = torch.linalg.svdvals(weights[0]), torch.linalg.svdvals(weights[1])
    naive = input_covariance(x).kappa * float(
        (sw[0] ** 2 + sv[0] ** 2) / (sw[-1] ** 2 + sv[-1] ** 2)
    )
    with pytest.raises(AssertionError):
        assert_bound_holds(naive, exact)
    assert lemma1_bound(weights, x).value == math.inf
    with pytest.raises(AssertionError):
        assert_bound_holds(BoundResult("halved", 0.5 * exact).value, exact)


def test_eq26_of_the_proof_fails_so_it_is_not_implemented() -> None:
    """lambda_max(Gamma) <= lambda_max(X^T V^T V X) (Eq. 26) fails for X = I, alpha = 0."""
    v = torch.tensor([[1.0, 1.0], [1.0, -1.0]], dtype=torch.float64)
    x = torch.eye(2, dtype=torch.float64)
    bound = leaky_relu_bound([v, torch.eye(2, dtype=torch.float64)], x, 0.0)
    xv = x @ v.T
    assert bound.components["lambda_max_gamma"] > float(torch.linalg.eigvalsh(xv @ xv.T)[-1])
    assert abs(bound.components["lambda_max_gamma"] - (3 + 5**0.5) / 2) < 1e-12


def test_bound_argument_checks() -> None:
    weights = random_weights([3, 4, 2], seed=0)
    x = random_inputs(5, 3, seed=0)
    with pytest.raises(ValueError, match="one hidden layer"):
        lemma1_bound(random_weights([3, 4, 4, 2], seed=0), x)
    with pytest.raises(ValueError, match="form"):
        lemma2_bound(weights, x, form="median")
    with pytest.raises(ValueError, match="slope"):
        leaky_relu_bound(weights, x, -0.1)
