"""SGD and Adam, written out.

They follow torch.optim.SGD (momentum with dampening 0, optionally Nesterov's) and
torch.optim.Adam (coupled L2 weight decay, bias correction, eps added after the square root)
update for update, per parameter group
(tests/condition_number/test_optim.py checks them against torch.optim). They exist because
torch.optim imports torch._dynamo on its first step, which costs about 2.5 s in every training job,
longer than most trials take to train.

A parameter group is a dict with ``params`` (a list of tensors), ``lr`` and ``weight_decay``.
Parameters carry a leading seed axis (matcond.condition_number.models); ``select`` drops the trials
that stopped training.
"""

from __future__ import annotations

import math

import torch


def _grad(p: torch.Tensor, weight_decay: float) -> torch.Tensor:
    return torch.add(p.grad, p, alpha=weight_decay) if weight_decay else p.grad


class SGD:
    """p <- p - lr d with d = grad + weight_decay p; with ``momentum`` m > 0, d is replaced by
    the buffer b <- m b + d (b = d at the first step), or by d + m b with ``nesterov``."""

    def __init__(self, groups: list[dict], momentum: float = 0.0, nesterov: bool = False):
        if nesterov and not momentum:
            raise ValueError("Nesterov momentum needs momentum > 0")
        self.groups, self.momentum, self.nesterov = groups, momentum, nesterov
        self.buffers: dict[int, torch.Tensor] = {}

    def select(self, keep: torch.Tensor, groups: list[dict]) -> None:
        """Go on with ``groups``, the parameters of the trials at positions ``keep`` of the
        seed axis, in the order of the current ones, and their momentum buffers."""
        old = [p for group in self.groups for p in group["params"]]
        new = [p for group in groups for p in group["params"]]
        self.buffers = {
            id(q): self.buffers[id(p)][keep.to(p.device)]
            for p, q in zip(old, new, strict=True)
            if id(p) in self.buffers
        }
        self.groups = groups

    def folds(self) -> bool:
        """Whether :meth:`step_product` can take the step: one parameter, no weight decay, no
        Nesterov."""
        params = [p for group in self.groups for p in group["params"]]
        return len(params) == 1 and not self.groups[0]["weight_decay"] and not self.nesterov

    @torch.no_grad()
    def step_product(self, a: torch.Tensor, b: torch.Tensor, scale: float) -> None:
        """:meth:`step` for the one parameter p (:meth:`folds`) whose gradient is
        ``scale * a @ b`` (batched products), the product folded into the update instead of
        formed: p <- p - lr scale a b, or with momentum the buffer <- momentum buffer +
        scale a b (at the first step scale a b) and p <- p - lr buffer."""
        group = self.groups[0]
        p, lr = group["params"][0], group["lr"]
        if not self.momentum:
            p.baddbmm_(a, b, alpha=-lr * scale)
            return
        if (buffer := self.buffers.get(id(p))) is None:
            buffer = self.buffers[id(p)] = torch.baddbmm(p, a, b, beta=0, alpha=scale)
        else:
            buffer.baddbmm_(a, b, beta=self.momentum, alpha=scale)
        p.add_(buffer, alpha=-lr)

    @torch.no_grad()
    def step(self) -> None:
        for group in self.groups:
            for p in group["params"]:
                d = _grad(p, group["weight_decay"])
                if not self.momentum:
                    p.add_(d, alpha=-group["lr"])  # one pass, as torch.optim.SGD
                    continue
                if (b := self.buffers.get(id(p))) is None:
                    b = self.buffers[id(p)] = d.clone()
                else:  # b <- m b + d in one pass
                    torch.add(d, b, alpha=self.momentum, out=b)
                p.add_(d.add(b, alpha=self.momentum) if self.nesterov else b, alpha=-group["lr"])


class Adam:
    """Adam (Kingma & Ba) with L2 weight decay added to the gradient, as torch.optim.Adam."""

    def __init__(
        self, groups: list[dict], betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
    ):
        self.groups, self.betas, self.eps, self.t = groups, betas, eps, 0
        params = [p for group in groups for p in group["params"]]
        self.m = {id(p): torch.zeros_like(p) for p in params}
        self.v = {id(p): torch.zeros_like(p) for p in params}

    def select(self, keep: torch.Tensor, groups: list[dict]) -> None:
        """Go on with ``groups``, the parameters of the trials at positions ``keep`` of the
        seed axis, in the order of the current ones, and their moments."""
        old = [p for group in self.groups for p in group["params"]]
        new = [p for group in groups for p in group["params"]]
        for moments in (self.m, self.v):
            kept = {id(q): moments[id(p)][keep.to(p.device)] for p, q in zip(old, new, strict=True)}
            moments.clear()
            moments.update(kept)
        self.groups = groups

    def folds(self) -> bool:
        """Adam's step needs the gradient itself (SGD.folds)."""
        return False

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        beta1, beta2 = self.betas
        correction2_sqrt = math.sqrt(1 - beta2**self.t)
        for group in self.groups:
            step_size = group["lr"] / (1 - beta1**self.t)
            for p in group["params"]:
                grad, m, v = _grad(p, group["weight_decay"]), self.m[id(p)], self.v[id(p)]
                m.lerp_(grad, 1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                p.addcdiv_(m, (v.sqrt() / correction2_sqrt).add_(self.eps), value=-step_size)


def make_optimizer(
    name: str, groups: list[dict], momentum: float = 0.0, nesterov: bool = False
) -> SGD | Adam:
    """SGD (with ``momentum``, ``nesterov``) or Adam over parameter groups (dicts with params,
    lr, weight_decay)."""
    if name == "sgd":
        return SGD(groups, momentum, nesterov)
    if name == "adam":
        return Adam(groups)
    raise ValueError(f"unknown optimizer {name!r}")
