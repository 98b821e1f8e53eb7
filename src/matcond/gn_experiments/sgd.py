"""Training for the GN experiments: a bias-free MLP (linear, ReLU or leaky) and SGD or AdamW on
the MSE to one-hot labels, pruned weights held at 0, with a callback at recorded epochs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from matcond.gn_experiments.data import Settings


class MLP(nn.Module):
    """``W_L phi(... phi(W_1 x))`` without biases, ``phi`` the leaky ReLU of slope ``alpha``
    (1: a deep linear net, 0: ReLU)."""

    def __init__(self, weights: Sequence[torch.Tensor], alpha: float = 0.0) -> None:
        super().__init__()
        self.weights = nn.ParameterList([nn.Parameter(w.clone()) for w in weights])
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the net to the rows of ``x``."""
        for index, weight in enumerate(self.weights):
            x = x @ weight.T
            if index < len(self.weights) - 1 and self.alpha != 1.0:
                x = torch.where(x > 0, x, self.alpha * x)
        return x

    def current(self) -> list[torch.Tensor]:
        """The weights now, detached copies, input layer first."""
        return [w.detach().clone() for w in self.weights]


def mse_loss(model: nn.Module, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``1/2`` squared error summed over outputs, mean over the rows."""
    return 0.5 * ((model(x) - targets) ** 2).sum(dim=1).mean()


def recorded_epochs(epochs: int, every: int) -> list[int]:
    """Epoch 0 (init), every ``every``-th epoch and the last one."""
    return sorted({0, epochs, *range(every, epochs, every)})


OPTIMIZERS = {
    "sgd": lambda params, s: torch.optim.SGD(
        params, lr=s["lr"], momentum=s.get("momentum", 0.0), weight_decay=s.get("weight_decay", 0.0)
    ),
    "adamw": lambda params, s: torch.optim.AdamW(
        params, lr=s["lr"], weight_decay=s.get("weight_decay", 0.0)
    ),
}


def sgd_train(
    model: nn.Module,
    x: np.ndarray,
    labels: np.ndarray,
    settings: Settings,
    seed: int,
    record: Callable[[int, float], None],
    masks: Mapping[str, torch.Tensor] | None = None,
) -> None:
    """Mini-batch training on the shuffled rows (``settings``: ``lr``, ``epochs``,
    ``batch_size``; optional ``optimizer`` in ``OPTIMIZERS``, default plain ``sgd``, with
    ``momentum`` and ``weight_decay``, default 0; ``record_every``, default 1), the parameters
    named in ``masks`` multiplied by their 0/1 mask after every step; ``record(epoch, loss)``
    with the loss on all rows (eval mode) at each recorded epoch (:func:`recorded_epochs`), all
    in the model's dtype."""
    dtype = next(model.parameters()).dtype
    inputs = torch.as_tensor(x).to(dtype)
    with torch.no_grad():
        classes = model.eval()(inputs[:1]).shape[1]
    targets = nn.functional.one_hot(torch.as_tensor(labels), classes).to(dtype)
    optimizer = OPTIMIZERS[settings.get("optimizer", "sgd")](model.parameters(), settings)
    masked = [(p, masks[name]) for name, p in model.named_parameters() if name in (masks or {})]
    generator = torch.Generator().manual_seed(seed)
    recorded = set(recorded_epochs(settings["epochs"], settings.get("record_every", 1)))
    for epoch in range(settings["epochs"] + 1):
        if epoch:
            model.train()
            order = torch.randperm(inputs.shape[0], generator=generator)
            for batch in order.split(settings["batch_size"]):
                optimizer.zero_grad()
                mse_loss(model, inputs[batch], targets[batch]).backward()
                optimizer.step()
                with torch.no_grad():
                    for param, mask in masked:
                        param.mul_(mask)
        if epoch in recorded:
            with torch.no_grad():
                record(epoch, float(mse_loss(model.eval(), inputs, targets)))
