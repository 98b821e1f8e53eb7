"""GN paper Fig. 1 and appendix I.1 (Figs. 13-16): magnitude pruning at init of a ReLU MLP, a
ViT, ResNets and a VGG on digits, the GN κ over the remaining parameters and the training loss
(package docstring: ``fig1_pruning``, ``Pruning architectures``)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from matcond.gauss_newton.reference import network_jacobian
from matcond.gauss_newton.spectrum import GNSpectrum, spectrum_from_factor
from matcond.gn_experiments.architectures import build, describe
from matcond.gn_experiments.data import Inputs, Settings, digits_images, make_inputs, seed_list
from matcond.gn_experiments.networks import INITS, calibrate_batchnorm
from matcond.gn_experiments.records import spectrum_columns
from matcond.gn_experiments.sgd import MLP, sgd_train

Masks = dict[str, torch.Tensor]


def magnitude_mask(weight: torch.Tensor, rate: float) -> torch.Tensor:
    """Boolean mask that drops the ``round(rate * numel)`` entries of smallest ``|w|``."""
    mask = torch.ones(weight.numel(), dtype=torch.bool)
    pruned = int(round(rate * weight.numel()))
    if pruned:
        mask[torch.argsort(weight.abs().flatten(), stable=True)[:pruned]] = False
    return mask.reshape(weight.shape)


def prune(model: nn.Module, rate: float) -> Masks:
    """Prune every weight matrix and kernel of ``model`` (its parameters of two or more
    dimensions whose name contains ``weight``) by magnitude, layer by layer, setting the
    dropped entries to 0; return the masks by parameter name. Biases, normalisation
    parameters, a ViT's class token and position embedding are kept whole."""
    masks = {
        name: magnitude_mask(param.detach(), rate)
        for name, param in model.named_parameters()
        if param.ndim >= 2 and "weight" in name
    }
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in masks:
                param.mul_(masks[name])
    return masks


def masked_gn_spectrum(model: nn.Module, x: np.ndarray, masks: Masks) -> GNSpectrum:
    """κ of the GN over the unpruned parameters: reference Jacobian restricted to them."""
    start = time.perf_counter()
    jac = network_jacobian(model, x)
    keep = torch.cat(
        [
            masks[name].flatten() if name in masks else torch.ones(p.numel(), dtype=torch.bool)
            for name, p in model.named_parameters()
        ]
    )
    return spectrum_from_factor(
        jac[:, keep] / math.sqrt(x.shape[0]), solver="reference_jacobian", seconds_from=start
    )


def _network(settings: Settings, inputs: Inputs, seed: int) -> nn.Module:
    """The sweep's network at init: the bias-free MLP (``architecture`` ``mlp``) or a stand-in
    of :mod:`architectures`."""
    if settings["architecture"] == "mlp":
        dims = [inputs.x.shape[1], *settings["hidden"], inputs.outputs]
        return MLP(INITS[settings["init"]](dims, seed), alpha=0.0)
    return build(settings, inputs.outputs, seed)


def network_name(settings: Settings) -> str:
    """The ``network`` column: ``MLP [64, 64]`` or the stand-in's :func:`describe`."""
    if settings["architecture"] == "mlp":
        return f"MLP {list(settings['hidden'])}"
    return describe(settings)


def _inputs(settings: Settings, whitened: bool, data: Settings) -> Inputs:
    """Digits without the always-zero pixels for the MLP; on the 8 x 8 grid for the CNNs."""
    if settings["architecture"] == "mlp":
        return make_inputs("digits", whitened, settings["train_samples"], data)
    return digits_images(settings["train_samples"], whitened, data["seed"])


def pruning_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ at init and the training loss of a magnitude-pruned network on digits per prune rate."""
    rows = []
    for whitened in settings["whiten"]:
        inputs = _inputs(settings, whitened, data)
        gn_x = inputs.x[: settings["gn_samples"]]
        for seed in seed_list(settings["seeds"]):
            for rate in settings["prune_rates"]:
                model = _network(settings, inputs, seed)
                masks = prune(model, float(rate))
                calibrate_batchnorm(model, gn_x)
                spectrum = masked_gn_spectrum(model, gn_x, masks)
                kept = sum(
                    int(masks[n].sum()) if n in masks else p.numel()
                    for n, p in model.named_parameters()
                )
                losses: dict[int, float] = {}
                model = model.to(torch.float32)  # trained in float32, as on the paper's GPUs
                sgd_train(model, inputs.x, inputs.labels, settings, seed, losses.__setitem__, masks)
                common: dict[str, Any] = {
                    **inputs.columns(),
                    "gn_samples": gn_x.shape[0],
                    "network": network_name(settings),
                    "init": settings.get("init", "torch_default"),  # stand-ins: PyTorch's
                    "optimizer": settings["optimizer"],
                    "lr": float(settings["lr"]),
                    "prune_rate": float(rate),
                    "seed": seed,
                    "n_params": kept,
                    **spectrum_columns(spectrum),
                }
                rows += [
                    {**common, "epoch": epoch, "train_loss": loss} for epoch, loss in losses.items()
                ]
    return pd.DataFrame(rows)
