"""The table columns of one network: the exact κ and its bounds (package docstring)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from matcond.gauss_newton.bounds import (
    leaky_relu_bound,
    lemma2_bound,
    residual_bound,
)
from matcond.gauss_newton.leaky_relu import leaky_relu_gn_spectrum
from matcond.gauss_newton.linear import linear_gn_spectrum
from matcond.gauss_newton.residual import residual_gn_spectrum
from matcond.gauss_newton.spectrum import GNSpectrum
from matcond.gn_experiments.columns import PER_LAYER_COLUMNS


def spectrum_columns(spectrum: GNSpectrum) -> dict[str, Any]:
    """The exact result's columns; ``reliability`` names what makes κ doubtful ('' if nothing)."""
    return {
        "kappa": spectrum.kappa,
        "rank": spectrum.rank,
        "rank_source": spectrum.rank_source,
        "gap_at_cut": spectrum.gap_at_cut,
        "relative_error": spectrum.relative_error,
        "reliable": spectrum.reliable,
        "reliability": spectrum.flags(),
        "solver": spectrum.solver,
    }


# Lemma 2's per-layer components (matcond.gauss_newton.bounds.lemma2_bound), as JSON lists.
def linear_record(
    weights: Sequence[torch.Tensor], x: np.ndarray, beta: float = 0.0, per_layer: bool = False
) -> dict[str, Any]:
    """Exact κ and the convex / max bounds (Lemma 2, or Eq. 7 for ``beta != 0``) of one net."""
    if beta:
        exact = residual_gn_spectrum(weights, beta, x)
        convex = residual_bound(weights, beta, x, form="convex")
        loose = residual_bound(weights, beta, x, form="max")
    else:
        exact = linear_gn_spectrum(weights, x)
        convex = lemma2_bound(weights, x, form="convex")
        loose = lemma2_bound(weights, x, form="max")
    record = {
        **spectrum_columns(exact),
        "bound_convex": convex.value,
        "bound_max": loose.value,
        "tightness_convex": convex.tightness(exact),
        "tightness_max": loose.tightness(exact),
        "kappa_sigma": convex.components["kappa_sigma"],
    }
    if per_layer:
        for column in PER_LAYER_COLUMNS:
            part = column.removesuffix("_per_layer")
            record[column] = json.dumps([float(v) for v in convex.components[part]])
    return record


def leaky_record(weights: Sequence[torch.Tensor], x: np.ndarray, alpha: float) -> dict[str, Any]:
    """Exact κ of ``W LeakyReLU_alpha(V x)`` and Lemma 4 with its terms."""
    exact = leaky_relu_gn_spectrum(weights, x, alpha)
    bound = leaky_relu_bound(weights, x, alpha)
    terms = {
        key: bound.components[key]
        for key in ("sigma_min_sq_x", "sigma_min_sq_w", "lambda_min_gamma", "lambda_max_gamma")
    }
    return {
        **spectrum_columns(exact),
        "bound": bound.value,
        "tightness": bound.tightness(exact),
        **terms,
    }
