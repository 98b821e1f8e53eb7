"""Training for the GN experiments: a bias-free MLP (linear, ReLU or leaky, optionally pruned)
and plain SGD on the MSE to one-hot labels, with a callback at recorded epochs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from matcond.gn_experiments.data import Settings


class MLP(nn.Module):
    """``W_L phi(... phi(W_1 x))`` without biases, ``phi`` the leaky ReLU of slope ``alpha``
    (1: a deep linear net, 0: ReLU), with fixed 0/1 ``masks`` on the weights (None: none)."""

    def __init__(
        self,
        weights: Sequence[torch.Tensor],
        alpha: float = 0.0,
        masks: Sequence[torch.Tensor] | None = None,
    ) -> None:
        super().__init__()
        masks = masks if masks is not None else [torch.ones_like(w) for w in weights]
        self.weights = nn.ParameterList(
            [nn.Parameter((w * m).clone()) for w, m in zip(weights, masks, strict=True)]
        )
        self.masks = [m.to(torch.float64) for m in masks]
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the net to the rows of ``x``."""
        for index, weight in enumerate(self.weights):
            x = x @ weight.T
            if index < len(self.weights) - 1 and self.alpha != 1.0:
                x = torch.where(x > 0, x, self.alpha * x)
        return x

    def apply_masks(self) -> None:
        """Set the pruned weights back to 0."""
        with torch.no_grad():
            for weight, mask in zip(self.weights, self.masks, strict=True):
                weight.mul_(mask)

    def current(self) -> list[torch.Tensor]:
        """The weights now, detached copies, input layer first."""
        return [w.detach().clone() for w in self.weights]


def mse_loss(model: nn.Module, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``1/2`` squared error summed over outputs, mean over the rows."""
    return 0.5 * ((model(x) - targets) ** 2).sum(dim=1).mean()


def recorded_epochs(epochs: int, every: int) -> list[int]:
    """Epoch 0 (init), every ``every``-th epoch and the last one."""
    return sorted({0, epochs, *range(every, epochs, every)})


def sgd_train(
    model: MLP,
    x: np.ndarray,
    labels: np.ndarray,
    settings: Settings,
    seed: int,
    record: Callable[[int, float], None],
) -> None:
    """Plain SGD (``settings``: ``lr``, ``epochs``, ``batch_size``, optional ``record_every``,
    default 1) on the shuffled rows, masks re-applied after each step; ``record(epoch, loss)``
    with the loss on all rows at each recorded epoch (:func:`recorded_epochs`)."""
    inputs = torch.as_tensor(x, dtype=torch.float64)
    classes = model.weights[-1].shape[0]
    targets = nn.functional.one_hot(torch.as_tensor(labels), classes).to(torch.float64)
    optimizer = torch.optim.SGD(model.parameters(), lr=settings["lr"])
    generator = torch.Generator().manual_seed(seed)
    recorded = set(recorded_epochs(settings["epochs"], settings.get("record_every", 1)))
    for epoch in range(settings["epochs"] + 1):
        if epoch:
            order = torch.randperm(inputs.shape[0], generator=generator)
            for batch in order.split(settings["batch_size"]):
                optimizer.zero_grad()
                mse_loss(model, inputs[batch], targets[batch]).backward()
                optimizer.step()
                model.apply_masks()
        if epoch in recorded:
            with torch.no_grad():
                record(epoch, float(mse_loss(model, inputs, targets)))
