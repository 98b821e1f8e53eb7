"""The GN paper's appendices F and G checked numerically (package docstring: ``Appendices``):
the functional Hessian of ``W V x`` against Eq. (18), and Lemma 7 / G.2 at Kaiming init."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from matcond.gauss_newton.bounds import lemma1_bound, lemma7_bound, lemma7_t
from matcond.gauss_newton.covariance import input_covariance
from matcond.gauss_newton.functional_hessian import (
    functional_hessian_matrix,
    omega_spectrum,
    residual_input_covariance,
)
from matcond.gauss_newton.linear import linear_gn_spectrum
from matcond.gn_experiments.data import Settings, gaussian_data, seed_list, sweep_inputs, whiten
from matcond.gn_experiments.networks import kaiming_normal
from matcond.gn_experiments.records import spectrum_columns


def _pseudo_kappa(matrix: torch.Tensor) -> float:
    """Largest over smallest nonzero singular value (numerical rank)."""
    values = torch.linalg.svdvals(matrix)
    rank = int(torch.linalg.matrix_rank(matrix))
    return float(values[0] / values[rank - 1]) if rank else math.nan


def _reference_error(h_f: torch.Tensor, sigmas: torch.Tensor, m: int) -> float:
    """Largest deviation, relative to ``sigma_max``, of the autodiff ``|eigenvalues(H_F)|``
    (descending) from the closed form: each ``sigma_i(Omega)`` twice ``m`` times, then 0."""
    observed = torch.linalg.eigvalsh(h_f).abs().sort(descending=True).values
    expected = torch.zeros_like(observed)
    closed = sigmas.repeat_interleave(2 * m)
    expected[: closed.numel()] = closed
    return float((observed - expected).abs().max() / sigmas[0])


def functional_hessian_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """Appendix F: κ(H_F) of ``W V x`` learning a teacher ``Z x`` at Kaiming init, per width,
    from the closed form (``+-sigma(Omega)``, checked against autodiff) with Eq. (18)."""
    rows = []
    d, k = settings["dim"], settings["outputs"]
    raw = gaussian_data(settings["n_samples"], d, data["seed"]) * np.geomspace(1, 10, d)
    for whitened in settings["whiten"]:
        x = whiten(raw) if whitened else raw
        kappa_sigma = input_covariance(x).kappa
        for width in settings["widths"]:
            for seed in seed_list(settings["seeds"]):
                v, w = kaiming_normal([d, width, k], seed)
                teacher = np.random.default_rng(10_000 + seed).standard_normal((k, d)) / d**0.5
                y = x @ teacher.T
                spectrum = omega_spectrum([v, w], x, y)
                omega = residual_input_covariance([v, w], x, y)
                h_f = functional_hessian_matrix([v, w], x, y)
                kappa = math.sqrt(spectrum.kappa)
                kappa_residual = _pseudo_kappa(w @ v - torch.as_tensor(teacher))
                rows.append(
                    {
                        "dataset": "gaussian",
                        "whitened": whitened,
                        "n_samples": x.shape[0],
                        "d": d,
                        "k": k,
                        "width": width,
                        "seed": seed,
                        **spectrum_columns(spectrum),
                        "kappa": kappa,
                        "reference_error": _reference_error(
                            h_f, torch.linalg.svdvals(omega), width
                        ),
                        "kappa_residual": kappa_residual,
                        "kappa_sigma": kappa_sigma,
                        "bound": kappa_residual * kappa_sigma,
                        "tightness": kappa_residual * kappa_sigma / kappa,
                    }
                )
    return pd.DataFrame(rows)


def init_bound_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """Appendix G: the exact κ of ``W V x`` at Kaiming init per width ``m`` against Lemma 1,
    Lemma 7 (holding with ``probability``) and its asymptotic form G.2."""
    rows = []
    t = lemma7_t(settings["probability"])
    for inputs in sweep_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        kappa_sigma = input_covariance(inputs.x).kappa
        for width in settings["widths"]:
            for seed in seed_list(settings["seeds"]):
                weights = kaiming_normal([d, width, k], seed)
                exact = linear_gn_spectrum(weights, inputs.x)
                # Kaiming normal: variance 2 / fan_in
                shape = (kappa_sigma, d, k, width, 2.0 / d, 2.0 / width)
                bounds = {
                    "lemma1": lemma1_bound(weights, inputs.x).value,
                    "lemma7": lemma7_bound(*shape, t).value,
                    "asymptotic_g2": lemma7_bound(*shape, 0.0).value,
                }
                rows.append(
                    {
                        **inputs.columns(),
                        "width": width,
                        "seed": seed,
                        **spectrum_columns(exact),
                        "kappa_sigma": kappa_sigma,
                        "t": t,
                        **{f"bound_{name}": value for name, value in bounds.items()},
                        **{f"tightness_{n}": v / exact.kappa for n, v in bounds.items()},
                    }
                )
    return pd.DataFrame(rows)
