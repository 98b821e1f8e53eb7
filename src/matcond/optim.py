"""SGD and Adam, written out.

They follow torch.optim.SGD (no momentum) and torch.optim.Adam (coupled L2 weight decay, bias
correction, eps added after the square root) update for update (tests/test_optim.py checks
them against torch.optim). They exist because torch.optim imports torch._dynamo on its first
step, which costs about 2.5 s in every training job, longer than most trials take to train.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


class SGD:
    """p <- p - lr (grad + weight_decay p)."""

    def __init__(self, params: Sequence[torch.Tensor], lr: float, weight_decay: float = 0.0):
        self.params, self.lr, self.weight_decay = list(params), lr, weight_decay

    @torch.no_grad()
    def step(self) -> None:
        for p in self.params:
            grad = p.grad + self.weight_decay * p if self.weight_decay else p.grad
            p.sub_(self.lr * grad)


class Adam:
    """Adam (Kingma & Ba) with L2 weight decay added to the gradient, as torch.optim.Adam."""

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        lr: float,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ):
        self.params, self.lr, self.weight_decay = list(params), lr, weight_decay
        self.betas, self.eps, self.t = betas, eps, 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        beta1, beta2 = self.betas
        step_size = self.lr / (1 - beta1**self.t)
        correction2_sqrt = math.sqrt(1 - beta2**self.t)
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            grad = p.grad + self.weight_decay * p if self.weight_decay else p.grad
            m.lerp_(grad, 1 - beta1)
            v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            p.addcdiv_(m, (v.sqrt() / correction2_sqrt).add_(self.eps), value=-step_size)


def make_optimizer(name: str, params: Sequence[torch.Tensor], lr: float, weight_decay: float):
    """SGD or Adam over ``params`` with the given learning rate and L2 weight decay."""
    if name == "sgd":
        return SGD(params, lr, weight_decay)
    if name == "adam":
        return Adam(params, lr, weight_decay)
    raise ValueError(f"unknown optimizer {name!r}")
