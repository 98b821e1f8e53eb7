"""Small torch modules with exactly the architectures of the structured GN forms.

They let the autodiff reference (:mod:`matcond.gauss_newton.reference`) and third-party tools
see the same network as the structured code. Weights are given input-first and become
float64 parameters registered in that order.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from matcond.gauss_newton._arrays import ArrayLike, as_float64, device_of


class LinearNet(nn.Module):
    """``F(x) = (W_L + beta I) ... (W_1 + beta I) x``; ``beta = 0`` is the plain deep linear net.

    ``I`` is the rectangular identity ``eye(a_l, a_{l-1})`` of each layer (GN paper §4.3).
    Inputs are rows: ``forward`` maps ``n x d`` to ``n x k``.
    """

    def __init__(self, weights: Sequence[ArrayLike], beta: float = 0.0) -> None:
        super().__init__()
        device = device_of(weights)
        self.weights = nn.ParameterList([nn.Parameter(as_float64(w, device)) for w in weights])
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the layers to the rows of ``x``."""
        for weight in self.weights:
            skip = torch.eye(*weight.shape, dtype=weight.dtype, device=weight.device)
            x = x @ (weight + self.beta * skip).T
        return x


class LeakyReLUNet(nn.Module):
    """``F(x) = W sigma(V x)`` with ``sigma = LeakyReLU(alpha)``; ``weights = [V, W]``."""

    def __init__(self, weights: Sequence[ArrayLike], alpha: float) -> None:
        super().__init__()
        if len(weights) != 2:
            raise ValueError("a one-hidden-layer net takes weights [V, W]")
        device = device_of(weights)
        self.weights = nn.ParameterList([nn.Parameter(as_float64(w, device)) for w in weights])
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the net to the rows of ``x``."""
        hidden = nn.functional.leaky_relu(x @ self.weights[0].T, negative_slope=self.alpha)
        return hidden @ self.weights[1].T
