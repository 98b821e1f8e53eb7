"""The GN paper's experiments during training (package docstring: ``During training``):
a deep linear net (appendices D and E: Figs. 10, 11, 12) and one-hidden-layer ReLU nets of
several widths (appendices C and I.2: Figs. 9, 18), trained by SGD on the digits."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import torch

from matcond.gauss_newton.leaky_relu import leaky_relu_gn_eigenvalues, leaky_relu_gn_spectrum
from matcond.gn_experiments.data import Inputs, Settings, make_inputs, seed_list
from matcond.gn_experiments.networks import INITS
from matcond.gn_experiments.records import linear_record, spectrum_columns
from matcond.gn_experiments.sgd import MLP, sgd_train


def _training_inputs(settings: Settings, data: Settings) -> list[Inputs]:
    """The digits (with labels), raw and/or whitened as ``settings["whiten"]`` lists."""
    return [
        make_inputs("digits", whitened, settings["train_samples"], data)
        for whitened in settings["whiten"]
    ]


def _common(inputs: Inputs, settings: Settings, seed: int, lr: float) -> dict[str, Any]:
    return {
        **inputs.columns(),
        "init": settings["init"],
        "lr": float(lr),
        "batch_size": settings["batch_size"],
        "seed": seed,
    }


def _linear_recorder(
    rows: list[dict[str, Any]], model: MLP, gn_x, base: dict[str, Any]
) -> Callable[[int, float], None]:
    """``record(epoch, loss)`` for :func:`sgd_train`: κ and Lemma 2 of the linear net."""

    def record(epoch: int, loss: float) -> None:
        gn = linear_record(model.current(), gn_x, per_layer=True)
        rows.append({**base, "epoch": epoch, "train_loss": loss, **gn})

    return record


def linear_training_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """Deep linear nets of each depth trained by SGD: at every recorded epoch the training
    loss, the exact κ (on all training rows), Lemma 2 and its per-layer terms."""
    rows: list[dict[str, Any]] = []
    for inputs in _training_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        for depth in settings["depths"]:
            dims = [d, *[settings["width"]] * (depth - 1), k]
            for seed in seed_list(settings["seeds"]):
                model = MLP(INITS[settings["init"]](dims, seed), alpha=1.0)
                base = {
                    **_common(inputs, settings, seed, settings["lr"]),
                    "width": settings["width"],
                    "depth": depth,
                }
                record = _linear_recorder(rows, model, inputs.x, base)
                sgd_train(model, inputs.x, inputs.labels, settings, seed, record)
    return pd.DataFrame(rows)


# Every hidden unit inactive on every GN row: the GN matrix is zero and κ undefined.
DEAD_NET = {
    "kappa": math.nan,
    "rank": 0,
    "rank_source": "tolerance",
    "gap_at_cut": math.nan,
    "relative_error": math.nan,
    "reliable": False,
    "reliability": "zero GN matrix: every hidden unit is dead on the GN rows",
    "solver": "none",
}


def _relu_recorder(
    rows: list[dict[str, Any]], model: MLP, gn_x, base: dict[str, Any], spectrum_at: set[int]
) -> Callable[[int, float], None]:
    """``record(epoch, loss)`` for :func:`sgd_train`: κ of the ReLU net's GN on ``gn_x``, and
    every eigenvalue (descending, JSON) at the epochs in ``spectrum_at``."""

    def record(epoch: int, loss: float) -> None:
        weights = model.current()
        row = {**base, "epoch": epoch, "train_loss": loss, "eigenvalues": ""}
        if not bool((torch.as_tensor(gn_x) @ weights[0].T > 0).any()):
            rows.append({**row, **DEAD_NET})
            return
        row.update(spectrum_columns(leaky_relu_gn_spectrum(weights, gn_x, 0.0)))
        if epoch in spectrum_at:
            values = leaky_relu_gn_eigenvalues(weights, gn_x, 0.0)[0].flip(0)
            row["eigenvalues"] = json.dumps([float(v) for v in values])
        rows.append(row)

    return record


def relu_training_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """One-hidden-layer ReLU nets of each width (with its own learning rate) trained by SGD:
    the training loss and the GN κ on the first ``gn_samples`` rows at every recorded epoch;
    the whole GN spectrum at init and at the end for ``spectrum_width`` and the first seed."""
    rows: list[dict[str, Any]] = []
    seeds = seed_list(settings["seeds"])
    for inputs in _training_inputs(settings, data):
        gn_x = inputs.x[: settings["gn_samples"]]
        d, k = inputs.x.shape[1], inputs.outputs
        for width, lr in zip(settings["widths"], settings["lrs"], strict=True):
            for seed in seeds:
                model = MLP(INITS[settings["init"]]([d, width, k], seed), alpha=0.0)
                base = {
                    **_common(inputs, settings, seed, lr),
                    "gn_samples": gn_x.shape[0],
                    "width": width,
                }
                chosen = width == settings["spectrum_width"] and seed == seeds[0]
                at = {0, settings["epochs"]} if chosen else set()
                record = _relu_recorder(rows, model, gn_x, base, at)
                sgd_train(model, inputs.x, inputs.labels, {**settings, "lr": lr}, seed, record)
    return pd.DataFrame(rows)
