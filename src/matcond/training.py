"""Online regression: learn a teacher from fresh Gaussian batches (paper §3.2-3.4).

Each optimizer step draws a fresh batch x ~ N(0, I) of ``batch_size`` inputs and targets
y = teacher(x) + eps, eps ~ N(0, noise_std^2 I), and takes one step on
L = 1/2 mean_batch ||model(x) - y||^2 (summed over outputs, averaged over the batch), so that
for y = W* x, E[grad_W] = W - W* and plain SGD from W = 0 has E[W_t] = (1 - (1 - lr)^t) W*.
An epoch is ``steps_per_epoch`` such steps (the paper's figures match one step per epoch).

Optimizers (matcond.optim) are SGD without momentum and Adam (betas 0.9/0.999, eps 1e-8),
update for update as torch.optim's; ``weight_decay`` is an L2 term added to the gradient of
the layers (for Adam that is coupled decay, not AdamW), never of the multipliers.

Models and their teachers come from the registry of matcond.models, corrective strategies
(what they add to the model, the loss, the gradient and after each epoch) from that of
matcond.strategies: this module knows no model or strategy by name.

All random draws happen on the CPU from the trial's own generators, so a trial's data are the
same on every device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from matcond.models import MODELS, Model
from matcond.optim import make_optimizer
from matcond.strategies import STRATEGIES, Target
from matcond.targets import DATA_STREAM, INIT_STREAM, stream_seed

# on_record(epoch, matrices by name, loss, gradient of the loss w.r.t. the product or None)
RecordFn = Callable[[int, dict[str, np.ndarray], float, np.ndarray | None], None]


@dataclass(frozen=True)
class TrainingOutcome:
    """What a training run leaves behind besides its recorded snapshots."""

    initial: dict[str, np.ndarray]
    final: dict[str, np.ndarray]
    diverged_epoch: int | None

    @property
    def diverged(self) -> bool:
        """Whether training stopped on a non-finite loss or weight."""
        return self.diverged_epoch is not None


def record_epochs(epochs: int, record_every: int) -> list[int]:
    """Epochs at which components are recorded: 0, k, 2k, ... and always the last one."""
    every = list(range(0, epochs + 1, record_every)) if record_every else []
    return sorted(set(every) | {epochs})


def _torch_linear(w: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    # nn.Linear.reset_parameters: kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    return torch.nn.init.kaiming_uniform_(w, a=5**0.5, generator=gen)


# Inits: (spec, generator, empty dim x dim tensor) -> the layer; the schema's enum lists them.
INITS = {
    "gaussian": lambda spec, gen, w: spec["init_scale"] * w.normal_(generator=gen),
    "lecun_normal": lambda spec, gen, w: w.normal_(generator=gen) / spec["dim"] ** 0.5,
    "torch_linear": lambda spec, gen, w: _torch_linear(w, gen),
    "orthogonal": lambda spec, gen, w: torch.nn.init.orthogonal_(w, generator=gen),
}


def init_layer(spec: dict, gen: torch.Generator) -> torch.Tensor:
    """One dim x dim layer drawn from the spec's ``init`` (schema: ``init``) on the CPU."""
    dtype, dim = getattr(torch, spec["dtype"]), spec["dim"]
    return INITS[spec["init"]](spec, gen, torch.empty(dim, dim, dtype=dtype))


def build_model(spec: dict, device: torch.device) -> Model:
    """The spec's model, its layers drawn by :func:`init_layer` from its init stream."""
    gen = torch.Generator().manual_seed(stream_seed(spec["seed"], INIT_STREAM))

    def layer() -> torch.Tensor:
        return init_layer(spec, gen).to(device)

    return MODELS[spec["model"]].build(spec, layer, STRATEGIES[spec["strategy"]])


def all_finite(t: torch.Tensor) -> bool:
    """Whether every entry of `t` is finite, in one reduction: max |t| is NaN when an entry
    is NaN (torch's max propagates NaN) and inf when one is ±inf. ~6x faster than
    `torch.isfinite(t).all()` at 2048x2048, which builds a mask first."""
    return t.numel() == 0 or bool(torch.isfinite(t.abs().max()))


def _snapshot(model: Model) -> dict[str, np.ndarray]:
    with torch.no_grad():
        return {
            k: v.detach().to("cpu", torch.float64).numpy().copy()
            for k, v in model.matrices().items()
        }


def train(
    spec: dict, targets: dict[str, np.ndarray], device: torch.device, on_record: RecordFn
) -> TrainingOutcome:
    """Train the spec's model on its teacher (``targets``: matcond.models.teacher_weights).

    ``on_record`` is called at every epoch of :func:`record_epochs` with float64 copies of the
    model's matrices, the last step's loss (NaN at epoch 0) and, if ``record_gradients``, the
    last step's gradient of the loss w.r.t. the product matrix (linear teachers only). Training
    stops at the first epoch whose loss or weights are not finite, or whose loss exceeds
    ``divergence_loss_ratio`` times the first epoch's, and returns it as ``diverged_epoch``;
    the diverged weights are then recorded at that epoch and at every later recorded epoch, so
    that a diverged trial has a row wherever a finished one has.
    """
    dtype = getattr(torch, spec["dtype"])
    kind, strategy = MODELS[spec["model"]], STRATEGIES[spec["strategy"]]
    data_gen = torch.Generator().manual_seed(stream_seed(spec["seed"], DATA_STREAM))
    model = build_model(spec, device)
    tensors = {k: torch.as_tensor(v, dtype=dtype, device=device) for k, v in targets.items()}
    teacher = kind.teacher(tensors)
    groups = model.param_groups(spec["lr"], spec.get("multiplier_lr_ratio", 1.0))
    for group in groups:
        group["weight_decay"] = spec["weight_decay"] if group is groups[0] else 0.0
    optimizer = make_optimizer(spec["optimizer"], groups)
    params = [p for group in groups for p in group["params"]]
    recorded = set(record_epochs(spec["epochs"], spec["record_every"]))
    target = Target(targets.get("product"), spec, device)
    want_gradient = spec["record_gradients"] and set(targets) == {"product"}
    shape = (spec["batch_size"], *kind.input_shape(spec))

    initial = _snapshot(model)
    if 0 in recorded:
        on_record(0, initial, float("nan"), None)
    loss_value, first_loss, diverged_epoch, gradient = float("nan"), float("nan"), None, None
    for epoch in range(1, spec["epochs"] + 1):
        for step in range(spec["steps_per_epoch"]):
            x = torch.randn(*shape, generator=data_gen, dtype=dtype)
            eps = spec["noise_std"] * torch.randn(*shape, generator=data_gen, dtype=dtype)
            x, eps = x.to(device), eps.to(device)
            with torch.no_grad():
                y = teacher(x) + eps
            residual = model(x) - y
            loss = 0.5 * residual.square().sum(dim=-1).mean()
            objective = loss
            if strategy.penalty is not None:
                objective = loss + strategy.penalty(model, spec, target)
            for p in params:
                p.grad = None
            objective.backward()
            if strategy.gradient is not None:
                strategy.gradient(model, spec, target)
            if want_gradient and epoch in recorded and step == spec["steps_per_epoch"] - 1:
                gradient = (
                    (residual.detach().T @ x / spec["batch_size"]).to("cpu", torch.float64).numpy()
                )
            optimizer.step()
        if strategy.after_epoch is not None:
            strategy.after_epoch(model, epoch, spec, target)
        loss_value = float(loss.detach())
        if epoch == 1:
            first_loss = loss_value
        exploded = loss_value > spec["divergence_loss_ratio"] * first_loss > 0
        finite = np.isfinite(loss_value) and all(all_finite(p) for p in params)
        if exploded or not finite:
            diverged_epoch = epoch
            snapshot = _snapshot(model)
            for later in sorted({epoch} | {e for e in recorded if e > epoch}):
                on_record(later, snapshot, loss_value, None)
            break
        if epoch in recorded:
            on_record(epoch, _snapshot(model), loss_value, gradient)
    return TrainingOutcome(initial, _snapshot(model), diverged_epoch)
