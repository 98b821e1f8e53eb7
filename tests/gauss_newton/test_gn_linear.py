"""Deep linear nets: structured GN forms and solvers against the autodiff Jacobian."""

import pytest
import torch
from gn_cases import linear_nets, random_inputs, random_weights, rel
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from matcond.gauss_newton import (
    LinearNet,
    choose_linear_solver,
    input_covariance,
    linear_gn_matrix,
    linear_gn_rank,
    linear_gn_spectrum,
    reference_gn_matrix,
    reference_gn_spectrum,
)
from matcond.gauss_newton.solvers import dense_eigenvalues

# (dims [d, a_1, ..., k], n, whitened, deficient (layer, rank) or None)
CASES = [
    ([4, 6, 3], 20, False, None),  # rectangular, non-whitened
    ([4, 6, 3], 20, True, None),  # whitened: Sigma = I / n
    ([6, 8, 3], 4, False, None),  # n < d: rank-deficient data
    ([6, 8, 3], 4, True, None),  # whitened with n < d: Sigma = c * projector
    ([5, 3, 4], 20, False, None),  # bottleneck m < min(d, k)
    ([3, 7, 3], 15, False, (0, 2)),  # rank-deficient W_1
    ([4, 5, 5, 3], 20, False, None),  # L = 3
    ([4, 5, 5, 3], 3, False, None),  # L = 3, n < d
    ([4, 6, 6, 3], 12, True, (1, 2)),  # L = 3, whitened, rank-deficient W_2
    ([4, 6, 2, 5, 3], 12, False, (2, 1)),  # L = 4, bottleneck and rank-1 layer
    ([5, 3], 10, False, None),  # L = 1
    ([3, 1], 5, False, None),  # L = 1, k = 1
    ([1, 4, 3], 10, False, None),  # d = 1
    ([4, 5, 1], 10, False, None),  # k = 1
    ([4, 5, 1], 1, False, None),  # k = 1, n = 1
]
IDS = [f"dims{c[0]}-n{c[1]}-{'white' if c[2] else 'raw'}-def{c[3]}" for c in CASES]


def _solvers(num_layers: int, whitened: bool) -> list[str]:
    names = ["dense", "lanczos", "arpack"]
    if num_layers <= 2:
        names.append("block_diag")
    if num_layers == 1 or (num_layers == 2 and whitened):
        names.append("closed_form")
    return names


@pytest.mark.parametrize(("dims", "n", "whiten", "deficient"), CASES, ids=IDS)
def test_every_solver_matches_the_jacobian(dims, n, whiten, deficient) -> None:
    weights = random_weights(dims, seed=len(dims) + n, deficient=deficient)
    x = random_inputs(n, dims[0], seed=n, whiten=whiten)
    reference = reference_gn_spectrum(LinearNet(weights), x)
    assert reference.gap_at_cut > 1e8, "the reference's tolerance cut must be unambiguous"
    assert linear_gn_rank(weights, x) == reference.rank
    for solver in _solvers(len(weights), whiten):
        result = linear_gn_spectrum(weights, x, solver=solver)
        assert result.rank == reference.rank, solver
        assert rel(result.kappa, reference.kappa) < 1e-8, solver
        assert rel(result.lambda_max, reference.lambda_max) < 1e-10, solver
        assert result.gap_at_cut > 1e8, solver
        assert result.rank_source == "analytic"


@pytest.mark.parametrize(("dims", "n", "whiten", "deficient"), CASES[:6], ids=IDS[:6])
def test_parameter_form_is_the_autodiff_gn_matrix(dims, n, whiten, deficient) -> None:
    """The p x p form equals J^T J / n entry by entry: the vec / Kronecker order is right."""
    weights = random_weights(dims, seed=3, deficient=deficient)
    x = random_inputs(n, dims[0], seed=4, whiten=whiten)
    expected = reference_gn_matrix(LinearNet(weights), x)
    torch.testing.assert_close(linear_gn_matrix(weights, x, form="p"), expected)


@pytest.mark.parametrize("form", ["kd", "ks"])
def test_kronecker_forms_are_symmetric_and_share_the_spectrum(form: str) -> None:
    weights = random_weights([4, 6, 5, 3], seed=5)
    x = random_inputs(3, 4, seed=6)  # n < d: the kd form is singular
    matrix = linear_gn_matrix(weights, x, form=form)
    torch.testing.assert_close(matrix, matrix.T, rtol=0, atol=0)
    rank = linear_gn_rank(weights, x)
    ours = dense_eigenvalues(matrix).flip(0)[:rank]
    params = dense_eigenvalues(linear_gn_matrix(weights, x, form="p")).flip(0)[:rank]
    torch.testing.assert_close(ours, params, rtol=1e-10, atol=0)


def test_papers_code_form_is_not_symmetric_but_similar() -> None:
    """U^T U (I (x) Sigma) (the paper's code) is not symmetric unless Sigma ~ I."""
    weights = random_weights([3, 5, 2], seed=7)
    x = random_inputs(10, 3, seed=8)
    cov = input_covariance(x)
    eye_in = torch.eye(3, dtype=torch.float64)
    utu = torch.kron(weights[1] @ weights[1].T, eye_in) + torch.kron(
        torch.eye(2, dtype=torch.float64), weights[0].T @ weights[0]
    )
    paper = utu @ torch.kron(torch.eye(2, dtype=torch.float64), cov.matrix)
    assert (paper - paper.T).abs().max() > 1e-3
    ours = torch.sort(dense_eigenvalues(linear_gn_matrix(weights, x, form="kd"))).values
    theirs = torch.sort(torch.linalg.eigvals(paper).real).values
    torch.testing.assert_close(ours, theirs, rtol=1e-9, atol=1e-12)


def test_sigma_input_and_numpy_input_agree_with_samples() -> None:
    weights = random_weights([4, 6, 3], seed=9)
    x = random_inputs(20, 4, seed=10)
    from_x = linear_gn_spectrum(weights, x)
    from_sigma = linear_gn_spectrum(weights, sigma=x.T @ x / 20)
    from_numpy = linear_gn_spectrum([w.numpy() for w in weights], x.numpy())
    assert rel(from_sigma.kappa, from_x.kappa) < 1e-10
    assert from_numpy.kappa == from_x.kappa


def test_auto_solver_choice() -> None:
    assert choose_linear_solver(1, False, 100, 10, 4096) == "closed_form"
    assert choose_linear_solver(2, True, 100, 10, 4096) == "closed_form"
    assert choose_linear_solver(2, False, 10**6, 10**6, 4096) == "block_diag"
    assert choose_linear_solver(3, False, 5000, 4000, 4096) == "dense"
    assert choose_linear_solver(3, False, 5000, 5000, 4096) == "lanczos"
    weights = random_weights([6, 8, 8, 5], seed=11)
    x = random_inputs(12, 6, seed=12)
    small = linear_gn_spectrum(weights, x, dense_max=8)
    assert small.solver == "lanczos"
    assert rel(small.kappa, linear_gn_spectrum(weights, x).kappa) < 1e-9


def test_errors() -> None:
    weights = random_weights([4, 6, 3], seed=13)
    x = random_inputs(10, 4, seed=14)
    with pytest.raises(ValueError, match="isotropic"):
        linear_gn_spectrum(weights, x, solver="closed_form")
    with pytest.raises(ValueError, match="one hidden layer"):
        linear_gn_spectrum(random_weights([4, 5, 5, 3], 0), x, solver="block_diag")
    with pytest.raises(ValueError, match="chain"):
        linear_gn_spectrum([weights[0], weights[0]], x)
    with pytest.raises(ValueError, match="exactly one"):
        linear_gn_spectrum(weights, x, sigma=torch.eye(4))
    with pytest.raises(ValueError, match="unknown solver"):
        linear_gn_spectrum(weights, x, solver="magic")


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.filter_too_much],
)
@given(linear_nets())
def test_property_structured_equals_jacobian(net) -> None:
    weights, x = net
    reference = reference_gn_spectrum(LinearNet(weights), x)
    assume(reference.kappa < 1e5 and reference.gap_at_cut > 1e8)
    result = linear_gn_spectrum(weights, x)
    assert result.rank == reference.rank
    assert rel(result.kappa, reference.kappa) < 1e-8


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(st.lists(st.integers(1, 6), min_size=2, max_size=5), st.integers(1, 8), st.integers(0, 99))
def test_generic_rank_is_singh_et_al(dims, n, seed) -> None:
    """Generic weights: rank(G_O) = q (s + k - q), q = min(s, a_1, ..., a_L), s = rank(Sigma)."""
    weights = random_weights(dims, seed)
    x = random_inputs(n, dims[0], seed)
    s = min(n, dims[0])
    q = min(s, *dims[1:])
    assert linear_gn_rank(weights, x) == q * (s + dims[-1] - q)
