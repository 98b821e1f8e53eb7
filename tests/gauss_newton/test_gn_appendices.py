"""GN paper appendices F and G: the functional Hessian's closed form against autodiff and
Eq. (18); Lemma 7 and its asymptotic form against Monte Carlo draws and their formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gn_cases import rel

from matcond.gauss_newton.bounds import lemma1_bound, lemma7_bound, lemma7_t
from matcond.gauss_newton.covariance import input_covariance
from matcond.gauss_newton.functional_hessian import (
    functional_hessian_matrix,
    omega_spectrum,
    residual_input_covariance,
)
from matcond.gauss_newton.linear import linear_gn_spectrum


def teacher_case(d: int, k: int, m: int, n: int, seed: int):
    gen = np.random.default_rng(seed)
    x = gen.standard_normal((n, d)) * np.geomspace(1, 8, d)
    weights = [
        gen.standard_normal((m, d)) / math.sqrt(d),
        gen.standard_normal((k, m)) / math.sqrt(m),
    ]
    teacher = gen.standard_normal((k, d))
    return weights, x, x @ teacher.T, teacher


@pytest.mark.parametrize(("d", "k", "m", "seed"), [(5, 3, 4, 0), (4, 4, 7, 1), (6, 2, 2, 2)])
def test_functional_hessian_is_omega_kron_identity(d, k, m, seed):
    weights, x, y, teacher = teacher_case(d, k, m, n=30, seed=seed)
    h_f = functional_hessian_matrix(weights, x, y)
    omega = residual_input_covariance(weights, x, y)
    v, w = weights
    sigma = x.T @ x / len(x)
    np.testing.assert_allclose(omega.numpy(), (w @ v - teacher) @ sigma, rtol=1e-10, atol=1e-12)
    # dense float64 reference: eigenvalues +-sigma_i(Omega), each m times, the rest 0
    values = np.sort(np.abs(np.linalg.eigvalsh(h_f.numpy())))[::-1]
    sigmas = np.linalg.svd(omega.numpy(), compute_uv=False)
    expected = np.zeros_like(values)
    expected[: 2 * m * len(sigmas)] = np.repeat(sigmas, 2 * m)
    np.testing.assert_allclose(values, expected, atol=1e-10 * sigmas[0])
    spectrum = omega_spectrum(weights, x, y)
    assert spectrum.reliable and rel(math.sqrt(spectrum.kappa), sigmas[0] / sigmas[-1]) < 1e-10
    # Eq. (18), k <= d and Sigma full rank
    residual = np.linalg.svd(w @ v - teacher, compute_uv=False)
    bound = residual[0] / residual[-1] * input_covariance(x).kappa
    assert math.sqrt(spectrum.kappa) <= bound * (1 + 1e-12)


def test_a_net_that_fits_its_targets_has_no_functional_hessian_kappa():
    weights, x, _, _ = teacher_case(4, 2, 3, n=10, seed=0)
    v, w = weights
    with pytest.raises(ValueError, match="H_F is zero"):
        omega_spectrum(weights, x, x @ (w @ v).T)


def test_lemma7_at_t_zero_is_the_asymptotic_formula_and_t_sets_the_probability():
    kappa_sigma, d, k, m, var_v, var_w = 3.0, 16, 4, 100, 1 / 16, 1 / 100
    g2 = lemma7_bound(kappa_sigma, d, k, m, var_v, var_w, 0.0).value
    upper = var_w * m * (1 + math.sqrt(k / m)) ** 2 + var_v * m * (1 + math.sqrt(d / m)) ** 2
    lower = var_w * m * (1 - math.sqrt(k / m)) ** 2 + var_v * m * (1 - math.sqrt(d / m)) ** 2
    assert rel(g2, kappa_sigma * upper / lower) < 1e-12
    t = lemma7_t(0.95)
    assert abs(1 - 8 * math.exp(-(t**2) / 2) - 0.95) < 1e-12
    assert lemma7_bound(kappa_sigma, d, k, m, var_v, var_w, t).value > g2
    assert lemma7_bound(kappa_sigma, d, k, 16, var_v, var_w, 5.0).value == math.inf


def test_lemma7_holds_on_gaussian_draws_at_least_as_often_as_promised():
    gen = np.random.default_rng(0)
    d, k, m, n = 12, 3, 60, 200
    x = gen.standard_normal((n, d)) * np.linspace(1, 3, d)
    kappa_sigma = input_covariance(x).kappa
    t = lemma7_t(0.9)
    bound = lemma7_bound(kappa_sigma, d, k, m, 1 / d, 1 / m, t).value
    holds = []
    for _ in range(100):
        weights = [
            gen.standard_normal((m, d)) / math.sqrt(d),
            gen.standard_normal((k, m)) / math.sqrt(m),
        ]
        exact = linear_gn_spectrum(weights, x).kappa
        assert exact <= lemma1_bound(weights, x).value * (1 + 1e-10)  # deterministic
        holds.append(exact <= bound)
    assert np.mean(holds) >= 0.9
