"""Online regression: learn a teacher from fresh Gaussian batches (paper §3.2-3.4).

Each optimizer step draws a fresh batch x ~ N(0, I) of ``batch_size`` inputs and targets
y = teacher(x) + eps, eps ~ N(0, noise_std^2 I), and takes one step on
L = 1/2 mean_batch ||model(x) - y||^2 (summed over outputs, averaged over the batch), so that
for y = W* x, E[grad_W] = W - W* and plain SGD from W = 0 has E[W_t] = (1 - (1 - lr)^t) W*.
An epoch is ``steps_per_epoch`` such steps (the paper's figures match one step per epoch).

Optimizers (matcond.optim) are SGD without momentum and Adam (betas 0.9/0.999, eps 1e-8),
update for update as torch.optim's; ``weight_decay`` is an L2 term added to the gradient of
the layers (for Adam that is coupled decay, not AdamW), never of the multipliers.

Corrective strategies (single matrix only, ``model: linear``):
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

All random draws happen on the CPU from the trial's own generators, so a trial's data are the
same on every device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from matcond import models
from matcond.components import pseudo_condition_number, singular_values
from matcond.optim import make_optimizer
from matcond.targets import ATTENTION_LAYERS, DATA_STREAM, INIT_STREAM, stream_seed

# on_record(epoch, matrices by name, loss, gradient of the loss w.r.t. the product or None)
RecordFn = Callable[[int, dict[str, np.ndarray], float, np.ndarray | None], None]
MULTIPLIER_STRATEGIES = {
    "multipliers": models.RowColumnMultipliers,
    "hybrid": models.RowColumnMultipliers,
}
MULTIPLIER_STRATEGIES["sv_multipliers"] = models.SingularValueMultipliers
# Strategies with a spectral penalty: log kappa is pulled toward the target's or toward 0.
SPECTRAL_PENALTIES = {
    "spectral_reg": ("target", "spectral_lambda"),
    "hybrid": ("target", "spectral_lambda"),
    "spectral_decay": ("one", "spectral_decay_lambda"),
}


@dataclass(frozen=True)
class TrainingOutcome:
    """What a training run leaves behind besides its recorded snapshots."""

    initial: dict[str, np.ndarray]
    final: dict[str, np.ndarray]
    diverged_epoch: int | None

    @property
    def diverged(self) -> bool:
        return self.diverged_epoch is not None


def record_epochs(epochs: int, record_every: int) -> list[int]:
    """Epochs at which components are recorded: 0, k, 2k, ... and always the last one."""
    every = list(range(0, epochs + 1, record_every)) if record_every else []
    return sorted(set(every) | {epochs})


def init_layer(spec: dict, gen: torch.Generator) -> torch.Tensor:
    """One dim x dim layer drawn from the spec's ``init`` (schema: ``init``) on the CPU."""
    dtype, dim, init = getattr(torch, spec["dtype"]), spec["dim"], spec["init"]
    if init == "gaussian":
        return spec["init_scale"] * torch.randn(dim, dim, generator=gen, dtype=dtype)
    if init == "lecun_normal":
        return torch.randn(dim, dim, generator=gen, dtype=dtype) / dim**0.5
    w = torch.empty(dim, dim, dtype=dtype)
    if init == "torch_linear":  # nn.Linear.reset_parameters: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        return torch.nn.init.kaiming_uniform_(w, a=5**0.5, generator=gen)
    if init == "orthogonal":
        return torch.nn.init.orthogonal_(w, generator=gen)
    raise ValueError(f"unknown init {init!r}")


def build_model(spec: dict, device: torch.device) -> models.Model:
    """The spec's model, its layers drawn by :func:`init_layer` from its init stream."""
    gen = torch.Generator().manual_seed(stream_seed(spec["seed"], INIT_STREAM))

    def layer() -> torch.Tensor:
        return init_layer(spec, gen).to(device)

    if spec["model"] == "deep_linear":
        return models.DeepLinear([layer() for _ in range(spec["depth"])])
    if spec["model"] == "relu_mlp":
        return models.ReluMLP(layer(), layer())
    if spec["model"] == "attention":
        return models.AttentionBlock(*(layer() for _ in ATTENTION_LAYERS))
    return MULTIPLIER_STRATEGIES.get(spec["strategy"], models.Linear)(layer())


def _teacher(
    targets: dict[str, np.ndarray], dtype, device
) -> Callable[[torch.Tensor], torch.Tensor]:
    t = {k: torch.as_tensor(v, dtype=dtype, device=device) for k, v in targets.items()}
    if "attention.wq" in t:
        block = models.AttentionBlock(*(t[f"attention.{name}"] for name in ATTENTION_LAYERS))
        return block.forward
    if "layer1" in t:
        return lambda x: torch.relu(x @ t["layer1"].T) @ t["layer2"].T
    return lambda x: x @ t["product"].T


def _spectral_penalty_grad(
    w_eff: torch.Tensor, log_kappa_goal: float, lam: float, clip: float
) -> torch.Tensor | None:
    """Clipped analytic gradient of lam (log kappa(W) - log_kappa_goal)^2 (None if W is singular).

    d sigma_i / dW = u_i v_i^T, so the gradient is 2 lam (log kappa - goal) (u_1 v_1^T / s_1 -
    u_n v_n^T / s_n), rescaled to Frobenius norm ``clip`` if it is longer.
    """
    u, s, vh = torch.linalg.svd(w_eff.detach(), full_matrices=False)
    if s[-1] <= 0:
        return None
    gap = torch.log(s[0] / s[-1]) - log_kappa_goal
    grad = (
        2 * lam * gap * (torch.outer(u[:, 0], vh[0]) / s[0] - torch.outer(u[:, -1], vh[-1]) / s[-1])
    )
    norm = torch.linalg.norm(grad)
    return grad * (clip / norm) if norm > clip else grad


@torch.no_grad()
def _svd_correct(w: torch.Tensor, target_s: torch.Tensor, blend: float) -> None:
    u, s, vh = torch.linalg.svd(w, full_matrices=False)
    w.copy_((u * ((1 - blend) * s + blend * target_s)) @ vh)


def _snapshot(model: models.Model) -> dict[str, np.ndarray]:
    with torch.no_grad():
        return {
            k: v.detach().to("cpu", torch.float64).numpy().copy()
            for k, v in model.matrices().items()
        }


def train(
    spec: dict, targets: dict[str, np.ndarray], device: torch.device, on_record: RecordFn
) -> TrainingOutcome:
    """Train the spec's model on its teacher (``targets``, see matcond.targets.make_teacher).

    ``on_record`` is called at every epoch of :func:`record_epochs` with float64 copies of the
    model's matrices, the last step's loss (NaN at epoch 0) and, if ``record_gradients``, the
    last step's gradient of the loss w.r.t. the product matrix (linear teachers only). Training
    stops at the first epoch whose loss or weights are not finite and returns it as
    ``diverged_epoch``; the diverged weights are then recorded at that epoch and at every later
    recorded epoch, so that a diverged trial has a row wherever a finished one has.
    """
    dtype = getattr(torch, spec["dtype"])
    dim, strategy = spec["dim"], spec["strategy"]
    data_gen = torch.Generator().manual_seed(stream_seed(spec["seed"], DATA_STREAM))
    model = build_model(spec, device)
    teacher = _teacher(targets, dtype, device)
    groups = model.param_groups(spec["lr"], spec.get("multiplier_lr_ratio", 1.0))
    for group in groups:
        group["weight_decay"] = spec["weight_decay"] if group is groups[0] else 0.0
    optimizer = make_optimizer(spec["optimizer"], groups)
    params = [p for group in groups for p in group["params"]]
    recorded = set(record_epochs(spec["epochs"], spec["record_every"]))
    if strategy != "standard":  # strategies act on one matrix learning targets["product"]
        target_s = singular_values(targets["product"])
        log_kappa_star = float(np.log(pseudo_condition_number(target_s, spec["rank_rtol"])))
        target_s = torch.as_tensor(target_s, dtype=dtype, device=device)
        eye = torch.eye(dim, dtype=dtype, device=device)
    want_gradient = spec["record_gradients"] and set(targets) == {"product"}
    # one input is a vector, or a sequence of seq_len tokens for the attention block
    input_shape = (spec["seq_len"], dim) if spec["model"] == "attention" else (dim,)

    initial = _snapshot(model)
    if 0 in recorded:
        on_record(0, initial, float("nan"), None)
    loss_value, diverged_epoch, gradient = float("nan"), None, None
    for epoch in range(1, spec["epochs"] + 1):
        for step in range(spec["steps_per_epoch"]):
            shape = (spec["batch_size"], *input_shape)
            x = torch.randn(*shape, generator=data_gen, dtype=dtype)
            eps = spec["noise_std"] * torch.randn(*shape, generator=data_gen, dtype=dtype)
            x, eps = x.to(device), eps.to(device)
            with torch.no_grad():
                y = teacher(x) + eps
            residual = model(x) - y
            loss = 0.5 * residual.square().sum(dim=-1).mean()
            objective = loss
            if strategy == "orthogonality_reg":
                w = model.layers[0]
                objective = loss + spec["orthogonality_mu"] * (w.T @ w - eye).square().sum()
            for p in params:
                p.grad = None
            objective.backward()
            if strategy in SPECTRAL_PENALTIES:
                goal, lam_key = SPECTRAL_PENALTIES[strategy]
                w_eff = model.effective()
                penalty_grad = _spectral_penalty_grad(
                    w_eff,
                    log_kappa_star if goal == "target" else 0.0,
                    spec[lam_key],
                    spec["spectral_clip"],
                )
                if penalty_grad is not None:
                    w_eff.backward(penalty_grad)
            if want_gradient and epoch in recorded and step == spec["steps_per_epoch"] - 1:
                gradient = (
                    (residual.detach().T @ x / spec["batch_size"]).to("cpu", torch.float64).numpy()
                )
            optimizer.step()
        last = epoch == spec["epochs"]
        if strategy == "svd_correction" and epoch % spec["svd_every"] == 0 and not last:
            _svd_correct(model.layers[0], target_s, spec["svd_blend"])
        loss_value = float(loss.detach())
        if not (np.isfinite(loss_value) and all(bool(torch.isfinite(p).all()) for p in params)):
            diverged_epoch = epoch
            snapshot = _snapshot(model)
            for later in sorted({epoch} | {e for e in recorded if e > epoch}):
                on_record(later, snapshot, loss_value, None)
            break
        if epoch in recorded:
            on_record(epoch, _snapshot(model), loss_value, gradient)
    return TrainingOutcome(initial, _snapshot(model), diverged_epoch)
