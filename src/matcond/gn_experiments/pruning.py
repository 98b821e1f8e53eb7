"""GN paper Fig. 1: magnitude pruning at init of a ReLU MLP on digits, its GN κ over the
remaining weights and its training loss (package docstring: ``fig1_pruning``)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from matcond.gauss_newton.reference import network_jacobian
from matcond.gauss_newton.spectrum import GNSpectrum, spectrum_from_factor
from matcond.gn_experiments.data import DIGITS_CLASSES, Settings, make_inputs, seed_list
from matcond.gn_experiments.networks import INITS
from matcond.gn_experiments.records import spectrum_columns


class MaskedMLP(nn.Module):
    """Bias-free ReLU MLP ``W_L relu(... relu(W_1 x))`` with fixed 0/1 masks on its weights."""

    def __init__(self, weights: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]) -> None:
        super().__init__()
        self.weights = nn.ParameterList(
            [nn.Parameter((w * m).clone()) for w, m in zip(weights, masks, strict=True)]
        )
        self.masks = [m.to(torch.float64) for m in masks]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the net to the rows of ``x``."""
        for index, weight in enumerate(self.weights):
            x = x @ weight.T
            if index < len(self.weights) - 1:
                x = torch.relu(x)
        return x

    def apply_masks(self) -> None:
        """Set the pruned weights back to 0."""
        with torch.no_grad():
            for weight, mask in zip(self.weights, self.masks, strict=True):
                weight.mul_(mask)


def magnitude_mask(weight: torch.Tensor, rate: float) -> torch.Tensor:
    """Boolean mask that drops the ``round(rate * numel)`` entries of smallest ``|w|``."""
    mask = torch.ones(weight.numel(), dtype=torch.bool)
    pruned = int(round(rate * weight.numel()))
    if pruned:
        mask[torch.argsort(weight.abs().flatten(), stable=True)[:pruned]] = False
    return mask.reshape(weight.shape)


def masked_gn_spectrum(model: MaskedMLP, x: np.ndarray) -> GNSpectrum:
    """κ of the GN over the unpruned weights: reference Jacobian restricted to them."""
    start = time.perf_counter()
    jac = network_jacobian(model, x)
    keep = torch.cat([m.flatten().bool() for m in model.masks])
    return spectrum_from_factor(
        jac[:, keep] / math.sqrt(x.shape[0]), solver="reference_jacobian", seconds_from=start
    )


def mse_loss(model: nn.Module, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``1/2`` squared error summed over outputs, mean over the rows."""
    return 0.5 * ((model(x) - targets) ** 2).sum(dim=1).mean()


def train_losses(
    model: MaskedMLP, x: np.ndarray, labels: np.ndarray, settings: Settings, seed: int
):
    """Training loss on the whole training set before training and after each epoch of SGD."""
    inputs = torch.as_tensor(x, dtype=torch.float64)
    targets = nn.functional.one_hot(torch.as_tensor(labels), DIGITS_CLASSES).to(torch.float64)
    optimizer = torch.optim.SGD(model.parameters(), lr=settings["lr"])
    generator = torch.Generator().manual_seed(seed)
    losses = []
    with torch.no_grad():
        losses.append(float(mse_loss(model, inputs, targets)))
    for _ in range(settings["epochs"]):
        order = torch.randperm(inputs.shape[0], generator=generator)
        for batch in order.split(settings["batch_size"]):
            optimizer.zero_grad()
            mse_loss(model, inputs[batch], targets[batch]).backward()
            optimizer.step()
            model.apply_masks()
        with torch.no_grad():
            losses.append(float(mse_loss(model, inputs, targets)))
    return losses


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
                model = MaskedMLP(weights, masks)
                spectrum = masked_gn_spectrum(model, gn_x)
                kept = int(sum(int(m.sum()) for m in masks))
                losses = train_losses(model, inputs.x, inputs.labels, settings, seed)
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
                    {**common, "epoch": epoch, "train_loss": loss}
                    for epoch, loss in enumerate(losses)
                ]
    return pd.DataFrame(rows)
