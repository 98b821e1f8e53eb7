"""The trained models: a single matrix, its multiplier variants, deep linear nets, a ReLU MLP,
one attention block.

Every model maps a batch x (batch x in_dim, or batch x tokens x dim for the attention block)
to predictions of the same shape, exposes its parameter groups with their learning-rate
factors, and names the matrices whose components are recorded: ``product`` is the end-to-end
matrix (W_eff for one layer, W_L ... W_1 for a deep linear net, W_2 W_1 for the ReLU MLP,
which is not its function), ``layer{l}`` each layer; the attention block records the products
that its function determines (see :class:`AttentionBlock`).
"""

from __future__ import annotations

import torch


def _init(
    shape: tuple[int, int], scale: float, gen: torch.Generator, dtype: torch.dtype
) -> torch.Tensor:
    return scale * torch.randn(*shape, generator=gen, dtype=dtype)


class Model(torch.nn.Module):
    """Base: subclasses set ``layers`` (a ParameterList) and may add multiplier parameters."""

    layers: torch.nn.ParameterList

    def param_groups(self, lr: float, multiplier_lr_ratio: float) -> list[dict]:
        """Optimizer groups: the layers at ``lr``, multipliers at ``lr * multiplier_lr_ratio``."""
        groups = [{"params": list(self.layers), "lr": lr}]
        multipliers = self.multipliers()
        if multipliers:
            groups.append({"params": multipliers, "lr": lr * multiplier_lr_ratio})
        return groups

    def multipliers(self) -> list[torch.nn.Parameter]:
        return []

    def effective(self) -> torch.Tensor:
        """The end-to-end matrix (``product``)."""
        raise NotImplementedError

    def matrices(self) -> dict[str, torch.Tensor]:
        """Every recorded matrix by name: ``product`` and, for several layers, ``layer{l}``."""
        out = {"product": self.effective()}
        if len(self.layers) > 1:
            out.update({f"layer{i + 1}": w for i, w in enumerate(self.layers)})
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.effective().T


class Linear(Model):
    """y = W x."""

    def __init__(self, w0: torch.Tensor):
        super().__init__()
        self.layers = torch.nn.ParameterList([w0])

    def effective(self) -> torch.Tensor:
        return self.layers[0]


class RowColumnMultipliers(Linear):
    """y = diag(r) W diag(c) x with learnable r, c (initialised to 1), as Velikanov et al."""

    def __init__(self, w0: torch.Tensor):
        super().__init__(w0)
        self.r = torch.nn.Parameter(torch.ones(w0.shape[0], dtype=w0.dtype, device=w0.device))
        self.c = torch.nn.Parameter(torch.ones(w0.shape[1], dtype=w0.dtype, device=w0.device))

    def multipliers(self) -> list[torch.nn.Parameter]:
        return [self.r, self.c]

    def effective(self) -> torch.Tensor:
        return self.r[:, None] * self.layers[0] * self.c[None, :]


class SingularValueMultipliers(Linear):
    """y = U diag(m * s) V^T x with W = U diag(s) V^T and learnable m (initialised to 1)."""

    def __init__(self, w0: torch.Tensor):
        super().__init__(w0)
        self.m = torch.nn.Parameter(torch.ones(min(w0.shape), dtype=w0.dtype, device=w0.device))

    def multipliers(self) -> list[torch.nn.Parameter]:
        return [self.m]

    def effective(self) -> torch.Tensor:
        u, s, vh = torch.linalg.svd(self.layers[0], full_matrices=False)
        return (u * (self.m * s)) @ vh


class DeepLinear(Model):
    """y = W_L ... W_1 x."""

    def __init__(self, ws: list[torch.Tensor]):
        super().__init__()
        self.layers = torch.nn.ParameterList(ws)

    def effective(self) -> torch.Tensor:
        out = self.layers[0]
        for w in self.layers[1:]:
            out = w @ out
        return out


class ReluMLP(Model):
    """y = W_2 relu(W_1 x) (hidden width = the input dimension)."""

    def __init__(self, w1: torch.Tensor, w2: torch.Tensor):
        super().__init__()
        self.layers = torch.nn.ParameterList([w1, w2])

    def effective(self) -> torch.Tensor:
        return self.layers[1] @ self.layers[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.layers[0].T) @ self.layers[1].T


class AttentionBlock(Model):
    """One single-head attention block with a ReLU MLP, on sequences x (batch x tokens x d).

    h = x + softmax(x W_Q^T (x W_K^T)^T / sqrt(d)) x W_V^T W_O^T and y = h + W_2 relu(W_1 h).
    The function fixes W_Q^T W_K and W_O W_V but not the factors (any invertible R gives
    W_Q -> R W_Q, W_K -> R^-T W_K the same block), so those products are recorded as ``qk``
    and ``ov``, beside the MLP's ``mlp1`` (W_1) and ``mlp2`` (W_2) (these two are fixed up to
    a permutation and positive scaling of the hidden units).
    """

    def __init__(self, wq, wk, wv, wo, w1, w2):
        super().__init__()
        self.layers = torch.nn.ParameterList([wq, wk, wv, wo, w1, w2])

    def matrices(self) -> dict[str, torch.Tensor]:
        wq, wk, wv, wo, w1, w2 = self.layers
        return {"qk": wq.T @ wk, "ov": wo @ wv, "mlp1": w1, "mlp2": w2}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        wq, wk, wv, wo, w1, w2 = self.layers
        scores = (x @ wq.T) @ (x @ wk.T).transpose(-1, -2) / x.shape[-1] ** 0.5
        h = x + torch.softmax(scores, dim=-1) @ (x @ wv.T) @ wo.T
        return h + torch.relu(h @ w1.T) @ w2.T
