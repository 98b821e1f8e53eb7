"""Online regression: learn a teacher from fresh Gaussian batches (paper §3.2-3.4).

Each optimizer step draws a fresh batch x ~ N(0, I) of ``batch_size`` inputs and targets
y = teacher(x) + eps, eps ~ N(0, noise_std^2 I), and takes one step on
L = 1/2 mean_batch ||model(x) - y||^2 (summed over outputs, averaged over the batch), so that
for y = W* x, E[grad_W] = W - W* and plain SGD from W = 0 has E[W_t] = (1 - (1 - lr)^t) W*.
An epoch is ``steps_per_epoch`` such steps (the paper's figures match one step per epoch).
A single matrix against a linear teacher takes the step in the residual form
(:func:`residual_step`), held as its error W - W* where no strategy acts on W (each snapshot
adds W* back in float64); other models and strategies through autograd.

Optimizers (matcond.condition_number.optim) are SGD (with momentum and Nesterov's) and Adam
(betas 0.9/0.999, eps 1e-8), update for update as torch.optim's; ``weight_decay`` is an L2
term added to the gradient of the layers (for Adam that is coupled decay, not AdamW), never of
the multipliers.

Models and their teachers come from the registry of matcond.condition_number.models, corrective
strategies (what they add to the model, the loss, the gradient and after each epoch) from that of
matcond.condition_number.strategies: this module knows no model or strategy by name.

Every random draw comes from the trial's own generators, so a trial's draws do not depend on
its block, its batch or its neighbours. Its initial weights are drawn on the CPU; its data
(each step's inputs and noise) on the device it trains on, so that a GPU block does not wait on
its host core to draw them: a GPU trial's data come from CUDA's Philox generator seeded as the
CPU's, so a GPU trial and a CPU trial of one seed are different draws of the same distribution.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from matcond.condition_number.models import MODELS, Model
from matcond.condition_number.optim import SGD, make_optimizer
from matcond.condition_number.strategies import STRATEGIES, Target
from matcond.condition_number.targets import DATA_STREAM, INIT_STREAM, stream_seed
from matcond.core.trials import setting

# on_record(trial index, epoch, matrices by name, loss, gradient of the loss w.r.t. the product
# or None, the matrices' singular values by name or None)
RecordFn = Callable[
    [int, int, dict[str, np.ndarray], float, np.ndarray | None, dict[str, np.ndarray] | None],
    None,
]
Snapshot = tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]


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


def _generators(
    specs: list[dict], stream: int, device: torch.device | str = "cpu"
) -> list[torch.Generator]:
    """Each spec's generator of ``stream`` on ``device``, seeded from its seed."""
    seeds = [stream_seed(s["seed"], stream) for s in specs]
    return [torch.Generator(device=device).manual_seed(seed) for seed in seeds]


def build_model(specs: list[dict], device: torch.device) -> Model:
    """The trials' model (one setting, one trial per spec), each trial's layers drawn by
    :func:`init_layer` from its own init stream and stacked along the seed axis."""
    gens = _generators(specs, INIT_STREAM)

    def layer() -> torch.Tensor:
        return torch.stack([init_layer(s, g) for s, g in zip(specs, gens, strict=True)]).to(device)

    linear = STRATEGIES[specs[0]["strategy"]].model
    return MODELS[specs[0]["model"]].build(specs[0], layer, linear)


def all_finite(t: torch.Tensor) -> torch.Tensor:
    """Whether every entry of each seed's slice of `t` (seeds x ...) is finite. One reading
    pass, the slice's sum: a NaN or infinite entry makes it non-finite, so a finite sum means
    finite entries. Only a slice whose sum is not finite (which finite entries near the
    range's edge can also give, by overflow) is decided exactly, from its largest and smallest
    entry (torch's max and min propagate NaN): 2.4x faster than those two passes at d = 512."""
    if t[0].numel() == 0:
        return torch.ones(t.shape[0], dtype=torch.bool, device=t.device)
    dims = tuple(range(1, t.dim()))
    finite = torch.isfinite(t.sum(dim=dims))
    if not bool(finite.all()):
        unsure = t[~finite]
        finite[~finite] = torch.isfinite(unsure.amax(dim=dims)) & torch.isfinite(
            unsure.amin(dim=dims)
        )
    return finite


def singular_values_where_finite(m: torch.Tensor) -> torch.Tensor:
    """The singular values of each seed's matrix of ``m`` (seeds x a x b), descending, computed
    on ``m``'s device for all seeds at once; NaN for a seed whose matrix is not finite (a
    diverged trial's, which no component reads)."""
    finite = all_finite(m)
    if bool(finite.all()):
        return torch.linalg.svdvals(m)
    s = torch.full((m.shape[0], min(m.shape[-2:])), math.nan, dtype=m.dtype, device=m.device)
    if bool(finite.any()):
        s[finite] = torch.linalg.svdvals(m[finite])
    return s


def _snapshots(
    model: Model, offset: torch.Tensor | None = None, spectra: bool = False
) -> list[Snapshot]:
    """Each seed's recorded matrices as float64 numpy arrays and, with ``spectra``, their
    singular values (:func:`singular_values_where_finite`, on the model's device), else None;
    ``offset`` (seeds x ...) is added to the product in float64 (W* to a model that holds
    W - W*)."""
    with torch.no_grad():
        matrices = {k: v.detach().to(torch.float64) for k, v in model.matrices().items()}
        if offset is not None:  # a new tensor: a float64 model's matrices are its own
            matrices["product"] = matrices["product"] + offset.to(torch.float64)
        values = (
            {k: singular_values_where_finite(v).cpu().numpy() for k, v in matrices.items()}
            if spectra
            else None
        )
        matrices = {k: v.cpu().numpy() for k, v in matrices.items()}
    seeds = next(iter(matrices.values())).shape[0]
    return [
        (
            {k: v[i].copy() for k, v in matrices.items()},
            None if values is None else {k: v[i] for k, v in values.items()},
        )
        for i in range(seeds)
    ]


def _stacked(targets: list[dict[str, np.ndarray]], dtype, device) -> dict[str, torch.Tensor]:
    return {
        name: torch.as_tensor(np.stack([t[name] for t in targets]), dtype=dtype, device=device)
        for name in targets[0]
    }


def residual_step(
    w: torch.Tensor,
    w_star: torch.Tensor | None,
    x: torch.Tensor,
    noise: torch.Tensor,
    noise_std: float,
    folded: SGD | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step's loss (per seed) and residual for y = W* x + noise_std * noise, in the
    residual form: R = X (W - W*)^T - noise_std * noise and dL/dW = R^T X / B (two batched
    products of 2 B d^2 each; autograd's forward and backward through the model and the
    teacher take three). The gradient is set as ``w.grad``, or with ``folded`` (an optimizer
    that :meth:`~matcond.condition_number.optim.SGD.folds`) never formed: its step takes the
    product into the update. ``w``, ``w_star``: seeds x d x d (``w_star`` None: ``w`` holds
    W - W*); ``x``, ``noise``: seeds x B x d."""
    with torch.no_grad():
        error = w if w_star is None else w - w_star
        residual = torch.baddbmm(noise, x, error.mT, beta=-noise_std)
        if folded is not None:
            folded.step_product(residual.mT, x, 1 / x.shape[1])
        else:  # beta = 0: the first argument only gives the shape; 1 / B is the product's alpha
            w.grad = torch.baddbmm(w, residual.mT, x, beta=0, alpha=1 / x.shape[1])
        loss = 0.5 * residual.square().sum(dim=-1).mean(dim=-1)
    return loss, residual


def _param_groups(model: Model, spec: dict) -> list[dict]:
    """The optimizer's groups: weight decay on the layers only, never on the multipliers."""
    groups = model.param_groups(spec["lr"], spec.get("multiplier_lr_ratio", 1.0))
    for group in groups:
        group["weight_decay"] = spec["weight_decay"] if group is groups[0] else 0.0
    return groups


def train(
    specs: list[dict],
    targets: list[dict[str, np.ndarray]],
    device: torch.device,
    on_record: RecordFn,
    spectra_on_device: bool = False,
) -> list[TrainingOutcome]:
    """Train the trials of one setting side by side, one per spec (they differ in their seed
    only), each on its teacher (``targets``: matcond.condition_number.models.teacher_weights of its
    spec).

    ``on_record(i, ...)`` is called for trial ``i`` at every epoch of :func:`record_epochs`
    with float64 copies of its model's matrices, the last step's loss (NaN at epoch 0) and, if
    ``record_gradients``, the last step's gradient of the loss w.r.t. the product matrix (linear
    teachers only). A trial stops at the first epoch whose loss or weights are not finite, or
    whose loss exceeds ``divergence_loss_ratio`` times its first epoch's, and returns it as
    ``diverged_epoch``; its diverged weights are then recorded at that epoch and at every later
    recorded epoch, so that a diverged trial has a row wherever a finished one has, and the
    others train on without it. Each trial draws its data from its own generators and every
    operation acts on each trial alone, so a trial's numbers do not depend on the others.

    With ``spectra_on_device`` the recorded matrices' singular values are computed on
    ``device``, for all trials at once, and handed to ``on_record`` (else None): on a GPU that
    spares the host the float64 SVDs that bound a block there (docs/benchmarks.md).
    """
    spec = specs[0]
    dtype = getattr(torch, spec["dtype"])
    kind, strategy = MODELS[spec["model"]], STRATEGIES[spec["strategy"]]
    data_gens = _generators(specs, DATA_STREAM, device)
    model = build_model(specs, device)
    tensors = _stacked(targets, dtype, device)
    teacher = kind.teacher(tensors)
    groups = _param_groups(model, spec)
    optimizer = make_optimizer(
        spec["optimizer"], groups, setting(spec, "momentum"), setting(spec, "nesterov")
    )
    params = [p for group in groups for p in group["params"]]
    # the residual form with nothing between gradient and step: the step takes the product
    hooked = strategy.penalty is not None or strategy.gradient is not None
    folded = optimizer if model.residual_form and not hooked and optimizer.folds() else None
    # With nothing after the epoch either, the trained matrix is held as its error E = W - W*
    # (the residual X E^T - eps without forming W - W* each step, a pass over every layer:
    # 6-14 % of a step at d = 128-256), and W* is added back to each snapshot. There a finite
    # loss implies finite weights (a non-finite entry of E makes the next residual non-finite,
    # inf * 0 being NaN, and a finite residual gives a finite step), so only the other paths
    # read their weights each epoch for the divergence check.
    as_error = folded is not None and strategy.after_epoch is None
    recorded = set(record_epochs(spec["epochs"], spec["record_every"]))
    target = Target(
        [t["product"] for t in targets] if "product" in targets[0] else None, spec, device
    )
    want_gradient = spec["record_gradients"] and set(targets[0]) == {"product"}
    shape = (spec["batch_size"], *kind.input_shape(spec))

    initial = _snapshots(model, spectra=spectra_on_device and 0 in recorded)
    if as_error:
        with torch.no_grad():
            model.layers[0].sub_(tensors["product"])

    def snapshots(spectra: bool = spectra_on_device) -> list[Snapshot]:
        """Each seed's matrices now, the product as W even where the model holds W - W*."""
        return _snapshots(model, tensors["product"] if as_error else None, spectra)

    final: list[dict[str, np.ndarray] | None] = [None] * len(specs)
    diverged_epoch: list[int | None] = [None] * len(specs)
    if 0 in recorded:
        for i, (matrices, spectra) in enumerate(initial):
            on_record(i, 0, matrices, float("nan"), None, spectra)
    active = list(range(len(specs)))  # trials still training, in the order of the seed axis
    first_loss = [float("nan")] * len(specs)
    losses = [float("nan")] * len(specs)
    gradient = None
    # each step's inputs and noise, drawn on the device into these in place (rows: the active
    # trials), each trial's rows as views made once (indexing them anew each step cost 4 % of
    # the training at d = 32 with 64 seeds side by side)
    inputs, noises = (torch.empty(len(specs), *shape, dtype=dtype, device=device) for _ in range(2))
    rows = list(zip(inputs, noises, strict=True))
    for epoch in range(1, spec["epochs"] + 1):
        for step in range(spec["steps_per_epoch"]):
            # the active trials' rows (the first len(active)), each from the trial's own stream
            for (trial_inputs, trial_noise), g in zip(rows, data_gens, strict=False):
                trial_inputs.normal_(generator=g)
                trial_noise.normal_(generator=g)
            x, noise = inputs[: len(active)], noises[: len(active)]
            for p in params:
                p.grad = None
            if model.residual_form:
                loss, residual = residual_step(
                    model.layers[0],
                    None if as_error else tensors["product"],
                    x,
                    noise,
                    spec["noise_std"],
                    folded,
                )
                if strategy.penalty is not None:
                    strategy.penalty(model, spec, target).sum().backward()
            else:
                with torch.no_grad():
                    y = teacher(x) + spec["noise_std"] * noise
                residual = model(x) - y
                loss = 0.5 * residual.square().sum(dim=-1).flatten(1).mean(dim=-1)
                objective = loss
                if strategy.penalty is not None:
                    objective = loss + strategy.penalty(model, spec, target)
                objective.sum().backward()
            if strategy.gradient is not None:
                strategy.gradient(model, spec, target)
            if want_gradient and epoch in recorded and step == spec["steps_per_epoch"] - 1:
                gradient = (
                    (residual.detach().mT @ x / spec["batch_size"]).to("cpu", torch.float64).numpy()
                )
            if folded is None:
                optimizer.step()
        if strategy.after_epoch is not None:
            strategy.after_epoch(model, epoch, spec, target)
        finite = [True] * len(active)
        if not as_error:
            finite = torch.stack([all_finite(p) for p in params]).all(dim=0).tolist()
        epoch_losses = loss.detach().tolist()  # one transfer for every active trial
        stopped = []
        for position, i in enumerate(active):
            losses[i] = epoch_losses[position]
            if epoch == 1:
                first_loss[i] = losses[i]
            exploded = losses[i] > spec["divergence_loss_ratio"] * first_loss[i] > 0
            if exploded or not (math.isfinite(losses[i]) and finite[position]):
                stopped.append(position)
        if stopped:
            stopped_snapshots = snapshots()
            for position in stopped:
                i = active[position]
                matrices, spectra = stopped_snapshots[position]
                diverged_epoch[i], final[i] = epoch, matrices
                for later in sorted({epoch} | {e for e in recorded if e > epoch}):
                    on_record(i, later, matrices, losses[i], None, spectra)
            keep = [p for p in range(len(active)) if p not in stopped]
            if not keep:
                break
            index = torch.tensor(keep)
            active, data_gens = [active[p] for p in keep], [data_gens[p] for p in keep]
            tensors = {k: v[index.to(device)] for k, v in tensors.items()}
            teacher = kind.teacher(tensors)
            if gradient is not None:
                gradient = gradient[keep]
            model.select(index)
            groups = _param_groups(model, spec)
            optimizer.select(index, groups)
            params = [p for group in groups for p in group["params"]]
            if target.products is not None:
                target = Target([target.products[p] for p in keep], spec, device)
        if epoch in recorded:
            for position, (matrices, spectra) in enumerate(snapshots()):
                i = active[position]
                grad = None if gradient is None else gradient[position]
                on_record(i, epoch, matrices, losses[i], grad, spectra)
    for position, (matrices, _) in enumerate(snapshots(spectra=False)):  # final: not recorded
        if diverged_epoch[active[position]] is None:
            final[active[position]] = matrices
    return [TrainingOutcome(initial[i][0], final[i], diverged_epoch[i]) for i in range(len(specs))]
