"""Third-party reference: curvlinops' GGN linear operator (MSELoss) has our lambda_max.

curvlinops builds the GGN of the loss it is given. For ``MSELoss(reduction="mean")`` over the
whole data set the loss is ``(1/(nk)) sum_i ||F(x_i) - y_i||^2``, whose GGN is
``(2/(nk)) sum_i J_i^T J_i = (2/k) G_O``; for ``reduction="sum"`` it is ``2 sum_i J_i^T J_i =
2n G_O``. We match ``lambda_max(GGN) = factor * lambda_max(G_O)`` with these factors.
"""

import pytest
import torch
from gn_cases import generator, random_inputs, random_weights, rel
from scipy.sparse.linalg import eigsh
from torch import nn

from matcond.gauss_newton import LeakyReLUNet, leaky_relu_gn_spectrum, reference_gn_spectrum

curvlinops = pytest.importorskip("curvlinops")
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)

N, D, M, K = 12, 4, 6, 3
FACTORS = {"mean": 2.0 / K, "sum": 2.0 * N}


def _curvlinops_lambda_max(model: nn.Module, x: torch.Tensor, reduction: str) -> float:
    targets = torch.randn(N, K, generator=generator(99), dtype=torch.float64)
    op = curvlinops.GGNLinearOperator(
        model, nn.MSELoss(reduction=reduction), list(model.parameters()), [(x, targets)]
    )
    return float(eigsh(op.to_scipy(), k=1, which="LA", tol=1e-14)[0][0])


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_leaky_relu_net_lambda_max(reduction: str) -> None:
    weights = random_weights([D, M, K], seed=0)
    x = random_inputs(N, D, seed=1)
    ours = leaky_relu_gn_spectrum(weights, x, 0.1).lambda_max
    theirs = _curvlinops_lambda_max(LeakyReLUNet(weights, 0.1), x, reduction)
    assert rel(theirs, FACTORS[reduction] * ours) < 1e-10


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mlp_with_biases_lambda_max(reduction: str) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(D, M), nn.Tanh(), nn.Linear(M, K)).double()
    x = random_inputs(N, D, seed=2)
    ours = reference_gn_spectrum(model, x).lambda_max
    theirs = _curvlinops_lambda_max(model, x, reduction)
    assert rel(theirs, FACTORS[reduction] * ours) < 1e-10
