"""The exact Gauss-Newton condition number of a model's stack of linear layers on data the
user gives, with the GN paper's upper bound (:mod:`matcond.gauss_newton`, where the exact
values are tested against autodiff).

Two networks are covered, as in the GN paper: the deep linear ``W_L ... W_1 x`` and the
one-hidden-layer ``W LeakyReLU_alpha(V x)``. Biases are not parameters of these networks: a
model with nonzero biases is analysed without them, and the result's ``note`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import torch

ACTIVATIONS = ("linear", "leaky_relu")


def _stack(entries: Mapping[str, Any], layers: Sequence[str] | None, config: Mapping) -> list:
    """The matrices named ``layers`` (input first), or every ``linear`` one in file order."""
    from matcond.own_weights.layers import matrices

    found = {m.layer: m for m in matrices(entries, config)}
    if layers is None:
        return [m for m in found.values() if m.layer_type == "linear"]
    if missing := [name for name in layers if name not in found]:
        raise ValueError(f"layers {missing} are not in the model (it has {list(found)[:12]})")
    return [found[name] for name in layers]


def gauss_newton_condition(
    source: str | Path | torch.nn.Module | Mapping[str, Any],
    x: np.ndarray | torch.Tensor,
    activation: str = "linear",
    alpha: float = 0.01,
    layers: Sequence[str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The GN matrix's condition number (over its nonzero eigenvalues) of the network made of
    ``source``'s matrices ``layers`` (input first; default: its ``linear`` layers in file
    order) on samples ``x`` (n x d), and the paper's bound: Lemma 2 for ``"linear"``, Lemma 4
    for ``"leaky_relu"`` (slope ``alpha``; two layers). Returns ``layers``, ``kappa``,
    ``lambda_max``, ``lambda_min_nonzero``, ``rank``, ``reliable`` and ``flags`` (why not),
    ``solver``, ``bound``, ``bound_name``, ``bound_over_kappa`` and ``note``. ValueError when
    the matrices do not chain or ``source`` holds several checkpoints."""
    import torch

    from matcond.gauss_newton import (
        leaky_relu_bound,
        leaky_relu_gn_spectrum,
        lemma2_bound,
        linear_gn_spectrum,
    )
    from matcond.own_weights.checkpoints import single_checkpoint

    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, not {activation!r}")
    _, _, entries, model_config, _ = single_checkpoint(source, config, "the source")
    stack = _stack(entries, layers, model_config)
    if activation == "leaky_relu" and len(stack) != 2:
        raise ValueError(f"leaky_relu is for one hidden layer: 2 matrices, not {len(stack)}")
    weights = [m.matrix.detach().to(torch.float64) for m in stack]
    x = torch.as_tensor(x, dtype=torch.float64)
    inputs = x.shape[1] if x.ndim == 2 else None
    for m, width in zip(stack, [inputs, *(w.shape[0] for w in weights[:-1])], strict=True):
        if m.matrix.shape[1] != width:
            raise ValueError(
                f"layer {m.layer!r} takes {m.matrix.shape[1]} inputs, it is given {width} "
                "(x is n x d; the layers go input first)"
            )
    if activation == "linear":
        spectrum, bound = linear_gn_spectrum(weights, x), lemma2_bound(weights, x)
    else:
        spectrum = leaky_relu_gn_spectrum(weights, x, alpha)
        bound = leaky_relu_bound(weights, x, alpha)
    biases = [
        key
        for m in stack
        if (key := m.tensor.removesuffix("weight") + "bias") in entries
        and bool(entries[key].detach().abs().max() > 0)
    ]
    return {
        "layers": [m.layer for m in stack],
        "kappa": spectrum.kappa,
        "lambda_max": spectrum.lambda_max,
        "lambda_min_nonzero": spectrum.lambda_min_nonzero,
        "rank": spectrum.rank,
        "reliable": spectrum.reliable,
        "flags": spectrum.flags(),
        "solver": spectrum.solver,
        "bound": bound.value,
        "bound_name": bound.name,
        "bound_over_kappa": bound.tightness(spectrum),
        "note": f"nonzero biases left out: {biases}" if biases else "",
    }
