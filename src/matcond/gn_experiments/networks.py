"""Networks at initialisation for the GN sweeps: Kaiming and nn.Linear draws, residual skip
weights, BatchNorm with full-batch statistics, the one-hidden-layer net with and without
BatchNorm (package docstring)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

BETA_RULES: dict[str, Callable[[int], float]] = {
    "0": lambda depth: 0.0,
    "1": lambda depth: 1.0,
    "1/sqrt(L)": lambda depth: 1.0 / math.sqrt(depth),
    "1/L": lambda depth: 1.0 / depth,
}


def draw(
    shapes: Sequence[tuple[int, int]], seed: int, init: Callable[..., torch.Tensor]
) -> list[torch.Tensor]:
    """float64 matrices of ``shapes`` (``fan_out x fan_in``) drawn one after the other by the
    torch ``init`` function from ``torch.Generator().manual_seed(seed)``."""
    generator = torch.Generator().manual_seed(seed)
    weights = []
    for shape in shapes:
        weight = torch.empty(*shape, dtype=torch.float64)
        init(weight, generator=generator)
        weights.append(weight)
    return weights


def _chain(dims: Sequence[int]) -> list[tuple[int, int]]:
    return [(fan_out, fan_in) for fan_in, fan_out in zip(dims[:-1], dims[1:], strict=True)]


def kaiming_normal(dims: Sequence[int], seed: int) -> list[torch.Tensor]:
    """``[W_1, ..., W_L]``, ``W_l`` of shape ``dims[l] x dims[l-1]``, PyTorch Kaiming normal."""
    return draw(_chain(dims), seed, nn.init.kaiming_normal_)


def torch_default(dims: Sequence[int], seed: int) -> list[torch.Tensor]:
    """``[W_1, ..., W_L]`` drawn as ``nn.Linear`` draws its weight (Kaiming uniform, a = sqrt 5)."""
    return draw(
        _chain(dims), seed, lambda w, **kw: nn.init.kaiming_uniform_(w, a=math.sqrt(5), **kw)
    )


def xavier_normal(dims: Sequence[int], seed: int) -> list[torch.Tensor]:
    """``[W_1, ..., W_L]`` drawn by PyTorch's ``xavier_normal_`` (``std = sqrt(2 / (fan_in +
    fan_out))``), as the GN paper's appendix I.2 did."""
    return draw(_chain(dims), seed, nn.init.xavier_normal_)


INITS = {
    "kaiming_normal": kaiming_normal,
    "torch_default": torch_default,
    "xavier_normal": xavier_normal,
}


def calibrate_batchnorm(model: nn.Module, x: np.ndarray) -> nn.Module:
    """Put ``model`` in eval mode with every BatchNorm's running statistics set, layer by layer,
    to the mean and biased variance of its input over the rows of ``x``: the outputs on ``x``
    are those of training mode on that full batch, yet each depends on its own sample only."""

    def set_statistics(norm: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        dims = [0, *range(2, args[0].ndim)]
        norm.running_mean.copy_(args[0].mean(dim=dims))
        norm.running_var.copy_(args[0].var(dim=dims, unbiased=False))

    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d)]
    hooks = [norm.register_forward_pre_hook(set_statistics) for norm in norms]
    try:
        with torch.no_grad():
            model.eval()(torch.as_tensor(x, dtype=torch.float64))
    finally:
        for hook in hooks:
            hook.remove()
    return model


def one_hidden_linear(
    weights: Sequence[torch.Tensor], x: np.ndarray, batchnorm: bool
) -> nn.Sequential:
    """``W V x`` or ``W BN(V x)`` (BatchNorm1d in eval mode with the full-batch statistics)."""
    v, w = weights
    hidden = nn.Linear(v.shape[1], v.shape[0], bias=False, dtype=torch.float64)
    out = nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=torch.float64)
    with torch.no_grad():
        hidden.weight.copy_(v)
        out.weight.copy_(w)
    if not batchnorm:
        return nn.Sequential(hidden, out)
    norm = nn.BatchNorm1d(v.shape[0], dtype=torch.float64)
    return calibrate_batchnorm(nn.Sequential(hidden, norm, out), x)
