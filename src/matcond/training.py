"""Online matrix regression: learn W* from fresh Gaussian batches (paper §3.2).

Each optimizer step draws a fresh batch x ~ N(0, I) of ``batch_size`` inputs and targets
y = W* x + eps, eps ~ N(0, noise_std^2 I), and takes one step on
L(W) = 1/2 mean_batch ||W x - y||^2 (summed over outputs, averaged over the batch), so that
E[grad] = (W - W*) and plain SGD from W = 0 has E[W_t] = (1 - (1 - lr)^t) W*. An epoch is
``steps_per_epoch`` such steps (the paper's figures match one step per epoch).

Optimizers (matcond.optim) are SGD without momentum and Adam (betas 0.9/0.999, eps 1e-8),
update for update as torch.optim's; both take ``weight_decay`` as an L2 term added to the
gradient (for Adam that is coupled decay, not AdamW).
All random draws happen on the CPU from the trial's own generators, so a trial's data are the
same on every device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from matcond.optim import make_optimizer
from matcond.targets import DATA_STREAM, INIT_STREAM, stream_seed

RecordFn = Callable[[int, np.ndarray, float], None]


class DeviceUnavailableError(RuntimeError):
    """The config asks for a device this machine does not have."""


def resolve_device(requested: str) -> torch.device:
    """torch.device for the config's ``device`` (cpu or cuda); a clear error if cuda is missing."""
    if requested == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailableError(
            "config key device is 'cuda' but torch sees no GPU here "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda is not None}); "
            "set device: cpu"
        )
    return torch.device(requested)


@dataclass(frozen=True)
class TrainingOutcome:
    """What a training run leaves behind besides its recorded snapshots."""

    initial: np.ndarray
    final: np.ndarray
    final_loss: float
    diverged_epoch: int | None

    @property
    def diverged(self) -> bool:
        return self.diverged_epoch is not None


def record_epochs(epochs: int, record_every: int) -> list[int]:
    """Epochs at which components are recorded: 0, k, 2k, ... and always the last one."""
    every = list(range(0, epochs + 1, record_every)) if record_every else []
    return sorted(set(every) | {epochs})


def train_linear(
    target: np.ndarray, spec: dict, device: torch.device, on_record: RecordFn
) -> TrainingOutcome:
    """Train W (same shape as ``target``) by online regression as the spec says.

    ``on_record(epoch, W, loss)`` is called with a float64 copy of W at every epoch of
    :func:`record_epochs` (``loss`` is the last step's loss, NaN at epoch 0). Training stops at
    the first epoch whose loss or weights are not finite and returns it as ``diverged_epoch``;
    the diverged weights are then recorded at that epoch and at every later recorded epoch, so
    that a diverged trial has a row wherever a finished one has.
    """
    dtype = getattr(torch, spec["dtype"])
    out_dim, in_dim = target.shape
    data_gen = torch.Generator().manual_seed(stream_seed(spec["seed"], DATA_STREAM))
    init_gen = torch.Generator().manual_seed(stream_seed(spec["seed"], INIT_STREAM))
    w0 = spec["init_scale"] * torch.randn(out_dim, in_dim, generator=init_gen, dtype=dtype)
    weight = torch.nn.Parameter(w0.clone().to(device))
    w_star = torch.as_tensor(target, dtype=dtype, device=device)
    optimizer = make_optimizer(spec["optimizer"], [weight], spec["lr"], spec["weight_decay"])
    recorded = set(record_epochs(spec["epochs"], spec["record_every"]))

    def snapshot() -> np.ndarray:
        return weight.detach().to("cpu", torch.float64).numpy().copy()

    if 0 in recorded:
        on_record(0, snapshot(), float("nan"))
    loss_value, diverged_epoch = float("nan"), None
    for epoch in range(1, spec["epochs"] + 1):
        for _ in range(spec["steps_per_epoch"]):
            x = torch.randn(spec["batch_size"], in_dim, generator=data_gen, dtype=dtype)
            eps = spec["noise_std"] * torch.randn(
                spec["batch_size"], out_dim, generator=data_gen, dtype=dtype
            )
            x, eps = x.to(device), eps.to(device)
            loss = 0.5 * (x @ (weight - w_star).T - eps).square().sum(dim=1).mean()
            weight.grad = None
            loss.backward()
            optimizer.step()
        loss_value = float(loss.detach())
        if not (np.isfinite(loss_value) and bool(torch.isfinite(weight).all())):
            diverged_epoch = epoch
            for later in sorted({epoch} | {e for e in recorded if e > epoch}):
                on_record(later, snapshot(), loss_value)
            break
        if epoch in recorded:
            on_record(epoch, snapshot(), loss_value)
    return TrainingOutcome(
        initial=w0.to(torch.float64).numpy(),
        final=snapshot(),
        final_loss=loss_value,
        diverged_epoch=diverged_epoch,
    )
