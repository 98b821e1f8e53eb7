"""Condition number of the Gauss-Newton matrix ``G_O = (1/n) sum_i J_i^T J_i`` (MSE loss).

Exact (pseudo-)condition numbers for deep linear, linear residual and one-hidden-layer
leaky-ReLU networks through their Kronecker structure, a dense autodiff reference for any
small torch network, and the upper bounds of Zhao, Singh & Lucchi (GN paper: Lemmas 1, 2, 4,
Eq. 7). Everything is computed in float64 on the device of the inputs.
"""

from matcond.gauss_newton.bounds import (
    BoundResult,
    leaky_relu_bound,
    lemma1_bound,
    lemma2_bound,
    residual_bound,
)
from matcond.gauss_newton.covariance import InputCovariance, input_covariance
from matcond.gauss_newton.kronecker import KroneckerSum
from matcond.gauss_newton.leaky_relu import leaky_relu_gn_matrix, leaky_relu_gn_spectrum
from matcond.gauss_newton.linear import (
    LinearGNStructure,
    linear_gn_matrix,
    linear_gn_rank,
    linear_gn_spectrum,
    linear_gn_structure,
)
from matcond.gauss_newton.models import LeakyReLUNet, LinearNet
from matcond.gauss_newton.reference import (
    network_jacobian,
    reference_gn_matrix,
    reference_gn_spectrum,
)
from matcond.gauss_newton.residual import residual_gn_spectrum, residual_weights
from matcond.gauss_newton.solvers import choose_linear_solver
from matcond.gauss_newton.spectrum import GNSpectrum, spectrum_from_eigenvalues

__all__ = [
    "BoundResult",
    "GNSpectrum",
    "InputCovariance",
    "KroneckerSum",
    "LeakyReLUNet",
    "LinearGNStructure",
    "LinearNet",
    "choose_linear_solver",
    "input_covariance",
    "leaky_relu_bound",
    "leaky_relu_gn_matrix",
    "leaky_relu_gn_spectrum",
    "lemma1_bound",
    "lemma2_bound",
    "linear_gn_matrix",
    "linear_gn_rank",
    "linear_gn_spectrum",
    "linear_gn_structure",
    "network_jacobian",
    "reference_gn_matrix",
    "reference_gn_spectrum",
    "residual_bound",
    "residual_gn_spectrum",
    "residual_weights",
    "spectrum_from_eigenvalues",
]
