"""GN paper Fig. 1: magnitude pruning at init of a ReLU MLP on digits, its GN κ over the
remaining weights and its training loss (package docstring: ``fig1_pruning``)."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pandas as pd
import torch

from matcond.gauss_newton.reference import network_jacobian
from matcond.gauss_newton.spectrum import GNSpectrum, spectrum_from_factor
from matcond.gn_experiments.data import Settings, make_inputs, seed_list
from matcond.gn_experiments.networks import INITS
from matcond.gn_experiments.records import spectrum_columns
from matcond.gn_experiments.sgd import MLP, sgd_train


def magnitude_mask(weight: torch.Tensor, rate: float) -> torch.Tensor:
    """Boolean mask that drops the ``round(rate * numel)`` entries of smallest ``|w|``."""
    mask = torch.ones(weight.numel(), dtype=torch.bool)
    pruned = int(round(rate * weight.numel()))
    if pruned:
        mask[torch.argsort(weight.abs().flatten(), stable=True)[:pruned]] = False
    return mask.reshape(weight.shape)


def masked_gn_spectrum(model: MLP, x: np.ndarray) -> GNSpectrum:
    """κ of the GN over the unpruned weights: reference Jacobian restricted to them."""
    start = time.perf_counter()
    jac = network_jacobian(model, x)
    keep = torch.cat([m.flatten().bool() for m in model.masks])
    return spectrum_from_factor(
        jac[:, keep] / math.sqrt(x.shape[0]), solver="reference_jacobian", seconds_from=start
    )


def pruning_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ at init and the training loss of a magnitude-pruned ReLU MLP on digits per prune rate."""
    rows = []
    for whitened in settings["whiten"]:
        inputs = make_inputs("digits", whitened, settings["train_samples"], data)
        gn_x = inputs.x[: settings["gn_samples"]]
        dims = [inputs.x.shape[1], *settings["hidden"], inputs.outputs]
        for seed in seed_list(settings["seeds"]):
            weights = INITS[settings["init"]](dims, seed)
            for rate in settings["prune_rates"]:
                masks = [magnitude_mask(w, float(rate)) for w in weights]
                model = MLP(weights, alpha=0.0, masks=masks)
                spectrum = masked_gn_spectrum(model, gn_x)
                kept = int(sum(int(m.sum()) for m in masks))
                losses: dict[int, float] = {}
                sgd_train(model, inputs.x, inputs.labels, settings, seed, losses.__setitem__)
                common = {
                    **inputs.columns(),
                    "gn_samples": gn_x.shape[0],
                    "hidden": json.dumps(list(settings["hidden"])),
                    "init": settings["init"],
                    "prune_rate": float(rate),
                    "seed": seed,
                    "n_params": kept,
                    **spectrum_columns(spectrum),
                }
                rows += [
                    {**common, "epoch": epoch, "train_loss": loss} for epoch, loss in losses.items()
                ]
    return pd.DataFrame(rows)
