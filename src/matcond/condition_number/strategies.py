"""Corrective strategies: one object each, in one registry (:data:`STRATEGIES`).

A :class:`Strategy` says what it adds to the model (``model``: the class that wraps the one
trained matrix, e.g. with learnable multipliers), to the loss (``penalty``), to the gradient
after backpropagation (``gradient``) and after each epoch (``after_epoch``), and which settings
it reads (``settings``; the config schema marks the same settings as applying to it, and
tests/condition_number/test_strategies.py checks that the two agree). Strategies act on a single
matrix learning a linear target (``model: linear``). Training (matcond.condition_number.training)
only calls the hooks.

- ``multipliers``: W_eff = diag(r) W diag(c), r and c learned at lr * multiplier_lr_ratio;
- ``sv_multipliers``: W_eff = U diag(m s) V^T from the SVD of W, m learned likewise;
- ``spectral_reg``: adds lam (log kappa(W_eff) - log kappa*)^2 with kappa* the target's
  pseudo-condition number; its gradient is analytic, 2 lam (log kappa - log kappa*)
  (u_1 v_1^T / s_1 - u_n v_n^T / s_n), clipped to Frobenius norm ``spectral_clip``;
- ``hybrid``: multipliers plus spectral_reg (the slides' prescription);
- ``svd_correction``: every ``svd_every`` epochs, s(W) <- (1 - svd_blend) s(W) + svd_blend s(W*),
  never at the last epoch: the trained matrix is scored after plain steps, not on the epoch of
  a correction (where its error is several times lower than one epoch before);
- ``orthogonality_reg``: adds mu ||W^T W - I||_F^2;
- ``spectral_decay`` (structured weight decay, review W4d): adds lam (log kappa(W))^2, the
  spectral penalty toward kappa = 1 instead of kappa*, with the same clipped analytic gradient
  (``spectral_decay_lambda``, ``spectral_clip``): a decay that knows nothing of the target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from matcond.condition_number import models
from matcond.condition_number.components import pseudo_condition_number, singular_values


class Target:
    """What strategies may know of the targets W* of a block's trials (computed on first use;
    ``products``: one target per trial, or None for models without a single target)."""

    def __init__(self, products: list[np.ndarray] | None, spec: dict, device: torch.device):
        self.products, self.spec, self.device = products, spec, device
        self.dtype = getattr(torch, spec["dtype"])

    @cached_property
    def singular_values(self) -> torch.Tensor:
        """s(W*) of each trial (seeds x q), descending, in the training dtype."""
        s = np.stack([singular_values(w) for w in self.products])
        return torch.as_tensor(s, dtype=self.dtype, device=self.device)

    @cached_property
    def log_kappa(self) -> torch.Tensor:
        """log of each W*'s pseudo-condition number (one per seed), in the training dtype."""
        logs = [
            np.log(pseudo_condition_number(singular_values(w), self.spec["rank_rtol"]))
            for w in self.products
        ]
        return torch.tensor(logs, dtype=self.dtype, device=self.device)


Penalty = Callable[[models.Model, dict, Target], torch.Tensor]
GradientHook = Callable[[models.Model, dict, Target], None]
EpochHook = Callable[[models.Model, int, dict, Target], None]


@dataclass(frozen=True)
class Strategy:
    """A corrective strategy: what it does (``description``, Markdown, shown in the docs'
    list of strategies), its settings and what it adds to model, loss and gradient."""

    description: str
    settings: tuple[str, ...] = ()
    model: type[models.Model] = models.Linear
    penalty: Penalty | None = None
    gradient: GradientHook | None = None
    after_epoch: EpochHook | None = None


def spectral_penalty_grad(
    w_eff: torch.Tensor, log_kappa_goal: torch.Tensor, lam: float, clip: float
) -> torch.Tensor:
    """Clipped analytic gradient of lam (log kappa(W) - log_kappa_goal)^2, per seed.

    ``w_eff``: seeds x m x n, ``log_kappa_goal``: one goal per seed. d sigma_i / dW = u_i v_i^T,
    so the gradient is 2 lam (log kappa - goal) (u_1 v_1^T / s_1 - u_n v_n^T / s_n), rescaled
    to Frobenius norm ``clip`` if it is longer; zero for a seed whose W is singular (s_n = 0).
    """
    u, s, vh = torch.linalg.svd(w_eff.detach(), full_matrices=False)
    first = u[:, :, :1] * vh[:, :1, :] / s[:, :1, None]
    last = u[:, :, -1:] * vh[:, -1:, :] / s[:, -1:, None]
    gap = torch.log(s[:, 0] / s[:, -1]) - log_kappa_goal
    grad = (2 * lam * gap)[:, None, None] * (first - last)
    norm = torch.linalg.vector_norm(grad, dim=(-2, -1))
    grad = torch.where((norm > clip)[:, None, None], grad * (clip / norm)[:, None, None], grad)
    return torch.where((s[:, -1] <= 0)[:, None, None], 0.0, grad)


def spectral_gradient(lam_setting: str, toward_target: bool) -> GradientHook:
    """A gradient hook that pulls log kappa(W_eff) toward the target's (or toward 0)."""

    def hook(model: models.Model, spec: dict, target: Target) -> None:
        w_eff = model.effective()
        goal = target.log_kappa if toward_target else w_eff.new_zeros(w_eff.shape[0])
        grad = spectral_penalty_grad(w_eff, goal, spec[lam_setting], spec["spectral_clip"])
        w_eff.backward(grad)

    return hook


def orthogonality_penalty(model: models.Model, spec: dict, target: Target) -> torch.Tensor:
    """mu ||W^T W - I||_F^2, per seed."""
    w = model.layers[0]
    eye = torch.eye(w.shape[-1], dtype=w.dtype, device=w.device)
    return spec["orthogonality_mu"] * (w.mT @ w - eye).square().sum((-2, -1))


@torch.no_grad()
def svd_correct(w: torch.Tensor, target_s: torch.Tensor, blend: float) -> None:
    """Move each singular value of each seed's ``w`` (seeds x m x n) the fraction ``blend`` of
    the way to its ``target_s`` (seeds x q)."""
    u, s, vh = torch.linalg.svd(w, full_matrices=False)
    w.copy_((u * ((1 - blend) * s + blend * target_s)[:, None, :]) @ vh)


def svd_correction(model: models.Model, epoch: int, spec: dict, target: Target) -> None:
    """Every ``svd_every`` epochs but the last, :func:`svd_correct` the trained matrix."""
    if epoch % spec["svd_every"] == 0 and epoch != spec["epochs"]:
        svd_correct(model.layers[0], target.singular_values, spec["svd_blend"])


SPECTRAL = ("spectral_lambda", "spectral_clip")
STRATEGIES: dict[str, Strategy] = {
    "standard": Strategy("plain training, W_eff = W (the baseline of every comparison)"),
    "multipliers": Strategy(
        "W_eff = diag(r) W diag(c), r and c learned at `multiplier_lr_ratio` x lr",
        ("multiplier_lr_ratio",),
        models.RowColumnMultipliers,
    ),
    "sv_multipliers": Strategy(
        "(review Q6) W_eff = U diag(m s) V^T from the SVD of W, m learned likewise",
        ("multiplier_lr_ratio",),
        models.SingularValueMultipliers,
    ),
    "spectral_reg": Strategy(
        "adds `spectral_lambda` x (log kappa(W_eff) - log kappa\\*)^2, kappa\\* the target's "
        "pseudo-condition number; analytic gradient 2 lam (log kappa - log kappa\\*) "
        "(u_1 v_1^T / s_1 - u_n v_n^T / s_n), clipped to Frobenius norm `spectral_clip`; the "
        "defaults come from `ctrl_spectral_reg`, on held-out seeds (see "
        "[Spectral regularisation](theory.md#spectral-regularisation))",
        SPECTRAL,
        gradient=spectral_gradient("spectral_lambda", True),
    ),
    "hybrid": Strategy(
        "(the slides' prescription) multipliers and spectral_reg together",
        ("multiplier_lr_ratio", *SPECTRAL),
        models.RowColumnMultipliers,
        gradient=spectral_gradient("spectral_lambda", True),
    ),
    "svd_correction": Strategy(
        "every `svd_every` epochs, each singular value moves `svd_blend` of the way to the "
        "target's; never at the last epoch, so the matrix is scored after `svd_every` plain "
        "epochs and not on the epoch of its own correction (where the error is several times "
        "lower than one epoch before)",
        ("svd_every", "svd_blend"),
        after_epoch=svd_correction,
    ),
    "orthogonality_reg": Strategy(
        "(review W4b) adds `orthogonality_mu` x ||W^T W - I||_F^2",
        ("orthogonality_mu",),
        penalty=orthogonality_penalty,
    ),
    "spectral_decay": Strategy(
        "(structured weight decay, review W4d) adds `spectral_decay_lambda` x (log kappa(W))^2 "
        "with the same clipped gradient: a decay toward kappa = 1 that knows nothing of the "
        "target",
        ("spectral_decay_lambda", "spectral_clip"),
        gradient=spectral_gradient("spectral_decay_lambda", False),
    ),
}
