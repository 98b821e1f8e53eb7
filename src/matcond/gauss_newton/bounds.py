r"""Upper bounds on the GN pseudo-condition number (GN paper Lemmas 1, 2, 4, 7 and Eq. 7).

Every bound returns a :class:`BoundResult` with its value, its per-layer / per-term
components, and :meth:`BoundResult.tightness` (bound / exact). Notation as in
:mod:`matcond.gauss_newton.linear`: ``A_l = W_L ... W_{l+1}`` (``k x a_l``),
``C_l = W_{l-1} ... W_1`` (``a_{l-1} x d``).

Choices where the paper is ambiguous (each keeps the bound *valid*, by the paper's own
Weyl-inequality proofs, for any shapes; under the paper's assumption ``m > max(d, k)`` they
coincide with its statements):

* ``sigma_min^2`` of an output-side factor (``W``, ``A_l``) is ``lambda_min`` of its ``k x k``
  Gram ``A A^T``; of an input-side factor (``V``, ``C_l``) it is ``lambda_min`` of its ``d x d``
  Gram ``C^T C``. These are the quantities the proofs bound; they are 0 when the factor is
  (numerically) rank deficient on that side, e.g. for a hidden width ``m < d``. Using the
  smallest singular value instead would *not* give a valid bound there.
* ``kappa(Sigma)`` is the pseudo-condition number of ``Sigma`` (largest over smallest nonzero
  eigenvalue). The bounds then hold for the pseudo-condition number of ``G_O`` also when
  ``n < d``: on the range of ``I_k (x) Sigma`` every lower bound of the proofs holds with
  ``lambda_min^+(Sigma)``.
* Lemma 2 / Eq. 7, convex form: ``kappa(Sigma) sum_l gamma_l kappa^2(A_l) kappa^2(C_l)`` with
  ``gamma_l = alpha_l / sum_i alpha_i``, ``alpha_l = sigma_min^2(A_l) sigma_min^2(C_l)``, is
  evaluated as ``kappa(Sigma) sum_l sigma_max^2(A_l) sigma_max^2(C_l) / sum_l alpha_l`` — equal
  when all ``alpha_l > 0`` (the lemma's assumption) and still valid when some vanish. Max form:
  ``kappa(Sigma) max_l kappa^2(A_l) kappa^2(C_l)`` (``inf`` if any ``alpha_l = 0``).
* Lemma 1 is Lemma 2's convex form at ``L = 2``: ``kappa(Sigma) (s_max^2(W) + s_max^2(V)) /
  (s_min^2(W) + s_min^2(V))`` for ``F(x) = W V x``.
* Eq. 7 (residual nets) is Lemma 2 applied to ``W_l + beta I`` (rectangular identity), the
  weights through which the residual net's Jacobian factors. The paper's Eq. 8 additionally
  assumes aligned singular vectors and is not a bound, so it is not implemented.
* Lemma 4 / Eq. 11 bounds the condition number of the ``nk x nk`` form ``K`` (Eq. 10):
  ``(s_max^2(X) s_max^2(W) + lambda_max(Gamma)) / (alpha^2 s_min^2(X) s_min^2(W) +
  lambda_min(Gamma))`` with ``s_min^2(X) = lambda_min(X^T X)`` (``n x n``, zero when ``n > d``),
  ``s_min^2(W) = lambda_min(W W^T)`` and ``Gamma = H H^T`` (zero ``lambda_min`` when ``n > m``).
  A positive denominator makes ``K`` positive definite, so the pseudo-condition number of
  ``G_O`` equals ``kappa(K)``; a zero denominator gives ``inf``. The proof's looser second
  bound (Eqs. 25-26, ``Gamma`` replaced by ``X^T V^T V X``) is not implemented: Eq. (26)
  ``lambda_max(Gamma) <= lambda_max(X^T V^T V X)`` fails in general (e.g. ``X = I_2``,
  ``V = [[1, 1], [1, -1]]``, ``alpha = 0``: 2.618 > 2).

* Lemma 7 (appendix G.1) is Lemma 1 with the extreme singular values of Gaussian ``V``
  (``m x d``) and ``W`` (``k x m``) replaced by Vershynin's bounds ``sigma (sqrt(m) +- sqrt(.)
  +- t)``: a bound on a random draw that holds with probability at least
  ``1 - 8 exp(-t^2 / 2)``; a negative ``sqrt(m) - sqrt(.) - t`` gives the lower bound 0. At
  ``t = 0`` it is appendix G.2's asymptotic bound (``d, k, m -> inf`` at fixed ratios).

A smallest squared singular value of a numerically rank-deficient factor is set to exactly 0
(``matrix_rank``), so that rounding never turns an infinite bound into a finite one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch

from matcond.gauss_newton._arrays import (
    ArrayLike,
    as_float64_list,
    device_of,
    matrix_rank,
)
from matcond.gauss_newton.covariance import input_covariance
from matcond.gauss_newton.leaky_relu import activation_pattern, leaky_inputs
from matcond.gauss_newton.linear import partial_products
from matcond.gauss_newton.residual import residual_weights
from matcond.gauss_newton.spectrum import GNSpectrum

BoundForm = Literal["convex", "max"]
Component = float | tuple[float, ...]


@dataclass(frozen=True)
class BoundResult:
    """An upper bound on a GN (pseudo-)condition number and the terms it is made of."""

    name: str
    value: float
    components: dict[str, Component] = field(default_factory=dict)

    def tightness(self, exact: float | GNSpectrum) -> float:
        """``bound / exact`` (>= 1 for a valid bound; 1 means tight)."""
        kappa = exact.kappa if isinstance(exact, GNSpectrum) else float(exact)
        return self.value / kappa


def _ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, ``inf`` for a non-positive denominator."""
    return numerator / denominator if denominator > 0 else math.inf


def squared_extremes(matrix: torch.Tensor, side: Literal["rows", "cols"]) -> tuple[float, float]:
    """``(sigma_max^2, lambda_min(Gram))`` with Gram ``M M^T`` (rows) or ``M^T M`` (cols).

    ``lambda_min`` is 0 when ``M`` has numerical rank below the Gram's size.
    """
    svals = torch.linalg.svdvals(matrix)
    size = matrix.shape[0] if side == "rows" else matrix.shape[1]
    smallest = float(svals[-1]) ** 2 if matrix_rank(matrix) == size else 0.0
    return float(svals[0]) ** 2, smallest


def _layer_terms(
    weights: Sequence[torch.Tensor],
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per layer ``l``: ``sigma_max^2(A_l), lambda_min(A_l A_l^T), sigma_max^2(C_l),
    lambda_min(C_l^T C_l)``."""
    outer, inner = partial_products(weights)
    out = [squared_extremes(a, "rows") for a in outer]
    inn = [squared_extremes(c, "cols") for c in inner]
    return [o[0] for o in out], [o[1] for o in out], [i[0] for i in inn], [i[1] for i in inn]


def _deep_bound(
    name: str,
    weights: Sequence[torch.Tensor],
    kappa_sigma: float,
    form: BoundForm,
) -> BoundResult:
    """Lemma 2 (or Eq. 7 on shifted weights) in the convex or max form."""
    out_max, out_min, in_max, in_min = _layer_terms(weights)
    alphas = [o * i for o, i in zip(out_min, in_min, strict=True)]
    kappa_out = [_ratio(m, s) for m, s in zip(out_max, out_min, strict=True)]
    kappa_in = [_ratio(m, s) for m, s in zip(in_max, in_min, strict=True)]
    terms = [ko * ki for ko, ki in zip(kappa_out, kappa_in, strict=True)]
    total = sum(alphas)
    gammas = tuple(a / total if total > 0 else math.nan for a in alphas)
    if form == "convex":
        numerators = [o * i for o, i in zip(out_max, in_max, strict=True)]
        value = kappa_sigma * _ratio(sum(numerators), total)
    elif form == "max":
        value = kappa_sigma * max(terms)
    else:
        raise ValueError(f"unknown form {form!r}; use 'convex' or 'max'")
    return BoundResult(
        name=f"{name}_{form}",
        value=value,
        components={
            "kappa_sigma": kappa_sigma,
            "alpha": tuple(alphas),
            "gamma": gammas,
            "kappa_sq_outer": tuple(kappa_out),
            "kappa_sq_inner": tuple(kappa_in),
            "lambda_min_outer": tuple(out_min),
            "lambda_min_inner": tuple(in_min),
            "term": tuple(terms),
        },
    )


def lemma2_bound(
    weights: Sequence[ArrayLike],
    x: ArrayLike | None = None,
    *,
    sigma: ArrayLike | None = None,
    form: BoundForm = "convex",
) -> BoundResult:
    """Lemma 2 for ``W_L ... W_1 x`` (weights input-first), γ-weighted ``convex`` or ``max`` form.

    Components per layer ``l = 1..L``: ``alpha``, ``gamma``, ``kappa_sq_outer``
    (``kappa^2(W^{L:l+1})``), ``kappa_sq_inner`` (``kappa^2(W^{l-1:1})``), ``term`` (their
    product), ``lambda_min_outer`` / ``lambda_min_inner`` (``sigma_min^2`` of the two partial
    products, 0 when rank deficient), and ``kappa_sigma``.
    """
    device = device_of(weights, x, sigma)
    mats = as_float64_list(weights, device, "weights")
    cov = input_covariance(x, sigma=sigma, device=device)
    return _deep_bound("lemma2", mats, cov.kappa, form)


def lemma1_bound(
    weights: Sequence[ArrayLike], x: ArrayLike | None = None, *, sigma: ArrayLike | None = None
) -> BoundResult:
    """Lemma 1 for ``F(x) = W V x``, ``weights = [V, W]``.

    Components: ``kappa_sigma``, ``beta_w`` (the convex weight), ``kappa_sq_w``, ``kappa_sq_v``
    and the four squared extreme singular values.
    """
    if len(weights) != 2:
        raise ValueError("Lemma 1 is for one hidden layer: weights [V, W]")
    device = device_of(weights, x, sigma)
    v, w = as_float64_list(weights, device, "weights")
    cov = input_covariance(x, sigma=sigma, device=device)
    w_max, w_min = squared_extremes(w, "rows")
    v_max, v_min = squared_extremes(v, "cols")
    denominator = w_min + v_min
    return BoundResult(
        name="lemma1",
        value=cov.kappa * _ratio(w_max + v_max, denominator),
        components={
            "kappa_sigma": cov.kappa,
            "beta_w": w_min / denominator if denominator > 0 else math.nan,
            "kappa_sq_w": _ratio(w_max, w_min),
            "kappa_sq_v": _ratio(v_max, v_min),
            "sigma_max_sq_w": w_max,
            "sigma_min_sq_w": w_min,
            "sigma_max_sq_v": v_max,
            "sigma_min_sq_v": v_min,
        },
    )


def residual_bound(
    weights: Sequence[ArrayLike],
    beta: float,
    x: ArrayLike | None = None,
    *,
    sigma: ArrayLike | None = None,
    form: BoundForm = "convex",
) -> BoundResult:
    """Eq. (7) for ``(W_L + beta I) ... (W_1 + beta I) x``: Lemma 2 on the shifted weights."""
    result = lemma2_bound(residual_weights(weights, beta), x, sigma=sigma, form=form)
    return BoundResult(
        name=f"eq7_{form}", value=result.value, components={"beta": beta, **result.components}
    )


def leaky_relu_bound(weights: Sequence[ArrayLike], x: ArrayLike, alpha: float) -> BoundResult:
    """Lemma 4 / Eq. (11) for ``F(x) = W LeakyReLU_alpha(V x)``, ``weights = [V, W]``.

    ``x`` is ``n x d`` (samples in rows). Components: the squared extreme singular values of
    ``X`` and ``W``, ``lambda_max/min(Gamma)``, ``alpha``, numerator and denominator.
    """
    v, w, samples = leaky_inputs(weights, x, alpha)
    hidden = activation_pattern(v, samples, alpha) * (samples @ v.T)
    x_max, x_min = squared_extremes(samples, "rows")
    w_max, w_min = squared_extremes(w, "rows")
    gamma_max, gamma_min = squared_extremes(hidden, "rows")
    numerator = x_max * w_max + gamma_max
    denominator = alpha**2 * x_min * w_min + gamma_min
    return BoundResult(
        name="lemma4",
        value=_ratio(numerator, denominator),
        components={
            "sigma_max_sq_x": x_max,
            "sigma_min_sq_x": x_min,
            "sigma_max_sq_w": w_max,
            "sigma_min_sq_w": w_min,
            "lambda_max_gamma": gamma_max,
            "lambda_min_gamma": gamma_min,
            "alpha": alpha,
            "numerator": numerator,
            "denominator": denominator,
        },
    )


def lemma7_bound(
    kappa_sigma: float, d: int, k: int, m: int, var_v: float, var_w: float, t: float
) -> BoundResult:
    """Appendix G's bound for ``W V x`` at a Gaussian init (``V_ij ~ N(0, var_v)``, ``W_ij ~
    N(0, var_w)``, ``m >= max(d, k)``): with probability at least ``1 - 8 exp(-t^2/2)``,
    ``kappa <= kappa(Sigma) (var_w (sqrt m + sqrt k + t)^2 + var_v (sqrt m + sqrt d + t)^2) /
    (var_w (sqrt m - sqrt k - t)_+^2 + var_v (sqrt m - sqrt d - t)_+^2)``; ``t = 0``: G.2."""

    def low(side: int) -> float:
        return max(math.sqrt(m) - math.sqrt(side) - t, 0.0) ** 2

    upper = var_w * (math.sqrt(m) + math.sqrt(k) + t) ** 2
    upper += var_v * (math.sqrt(m) + math.sqrt(d) + t) ** 2
    return BoundResult(
        name="lemma7" if t else "asymptotic_g2",
        value=kappa_sigma * _ratio(upper, var_w * low(k) + var_v * low(d)),
        components={"kappa_sigma": kappa_sigma, "t": t},
    )


def lemma7_t(probability: float) -> float:
    """The ``t`` at which Lemma 7 holds with ``probability``: ``1 - 8 exp(-t^2/2) = p``."""
    return math.sqrt(2.0 * math.log(8.0 / (1.0 - probability)))
