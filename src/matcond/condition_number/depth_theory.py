r"""How a deep linear net learns its product: the Gauss-Newton operator in function space.

Setting (docs/depth-theory.md): ``P = W_L ... W_1`` (``k x d``, weights input-first as in
:mod:`matcond.gauss_newton.linear`) learns ``W*`` from inputs with ``E[x x^T] = Sigma`` on the
population loss ``1/2 E||P x - W* x||^2``, whose gradient w.r.t. ``W_l`` is
``A_l^T E Sigma C_l^T`` with ``E = P - W*``, ``A_l = W_L...W_{l+1}`` and ``C_l = W_{l-1}...W_1``.
One gradient step of size ``lr`` on every layer moves the product, to first order in ``lr``, by

    P' - P = -lr sum_l (A_l A_l^T) E Sigma (C_l^T C_l) = -lr K(E),

a linear map of the error whose matrix (row-major ``vec``) is
``sum_l (A_l A_l^T) (x) (C_l^T C_l Sigma)``: the GN paper's Kronecker form of the GN matrix
(:func:`matcond.gauss_newton.linear_gn_matrix`, form ``kd``) up to the similarity
``I (x) Sigma^{1/2}``, so it has the GN matrix's nonzero eigenvalues. For one layer
``K = I (x) Sigma``: every direction of the error shrinks alike. For deeper nets the directions in
the operator's small-eigenvalue subspace shrink slowest; and ``K`` itself changes as the layers
grow. :func:`predicted_error` applies the operator step by step, frozen over stretches of
steps: frozen at the initial weights for the whole run (prediction (a) of the docs), or at each
recorded epoch's saved weights until the next (prediction (b)).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.linalg
import torch

from matcond.condition_number.components import condition_number
from matcond.condition_number.models import teacher_weights
from matcond.condition_number.theory import noise_model
from matcond.condition_number.training import build_model
from matcond.gauss_newton._arrays import ArrayLike, as_float64, as_float64_list, device_of
from matcond.gauss_newton.kronecker import KroneckerSum
from matcond.gn_experiments.exp7 import exp7_layers, exp7_stages
from matcond.stats.summary import bootstrap_ci

# The predicted products of a trial (``matrix`` column of :func:`prediction_rows`), beside the
# trained ``product``: (a) K frozen at init, (b) K at each recorded epoch's saved weights,
# (m) the mean dynamics (:func:`mean_flow`) from the initial weights, (c) (m) plus the label
# noise the one-matrix theory leaves in the product (:func:`noise_floor`).
PREDICTIONS = {
    "predicted_init": "(a) GN operator frozen at init",
    "predicted_recorded": "(b) GN operator at each recorded epoch",
    "predicted_flow": "(m) mean dynamics: GN operator along its own trajectory",
    "predicted_noise": "(c) (m) plus the one-matrix theory's label-noise floor",
}
# What is compared per trial: the product's κ error, and its smallest singular value.
QUANTITIES = {"condition_number": "error", "smallest_singular_value": "trained"}


def flow_kronecker(layers: Sequence[ArrayLike], sigma: ArrayLike | None = None) -> KroneckerSum:
    """``K = sum_l (A_l A_l^T) (x) (C_l^T C_l Sigma)`` of the layers ``[W_1, ..., W_L]``, matrix
    free (row-major ``vec`` of the error; ``sigma`` None: identity), in float64."""
    device = device_of(layers)
    cov = None if sigma is None else as_float64(sigma, device)
    left, right = _flow_factors(as_float64_list(layers, device), cov)
    return KroneckerSum(list(left), list(right))


def _flow_factors(
    weights: Sequence[torch.Tensor], cov: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The factors of :func:`flow_kronecker`, stacked: ``A_l A_l^T`` and ``C_l^T C_l Sigma``
    (``cov`` None: identity) along a new first axis, for layers with any leading batch axes
    (one net per index: the factors of each net are its own)."""
    outer, inner = _partial_products_or_none(list(weights))
    batch, first, last = weights[0].shape[:-2], weights[0], weights[-1]
    rows, columns = last.shape[-2], first.shape[-1]
    eye_out = torch.eye(rows, dtype=first.dtype, device=first.device).expand(*batch, rows, rows)
    eye_in = torch.eye(columns, dtype=first.dtype, device=first.device)
    eye_in = eye_in.expand(*batch, columns, columns)
    left = [eye_out if a is None else a @ a.mT for a in outer]
    right = [eye_in if c is None else c.mT @ c for c in inner]
    if cov is not None:
        right = [gram @ cov for gram in right]
    return torch.stack(left), torch.stack(right)


def flow(
    layers: Sequence[ArrayLike], error: ArrayLike, sigma: ArrayLike | None = None
) -> torch.Tensor:
    """``K(E) = sum_l (A_l A_l^T) E Sigma (C_l^T C_l)``: minus the first-order change of the
    product per unit step of gradient descent on every layer (``sigma`` None: identity)."""
    error = as_float64(error, device_of(layers))
    return flow_kronecker(layers, sigma).matmat(error.reshape(-1)).reshape(error.shape)


def predicted_error(
    stretches: Sequence[tuple[Sequence[ArrayLike], int]],
    error: ArrayLike,
    lr: float,
    sigma: ArrayLike | None = None,
) -> torch.Tensor:
    """The error ``P - W*`` after linearised gradient descent from ``error``: for each
    ``(layers, steps)`` in ``stretches``, ``steps`` steps ``E <- E - lr K(E)`` with the
    operator of ``layers`` held fixed. Layers and error may carry leading batch axes (one
    net per index: each net's error moves by its own operator)."""
    device = device_of(stretches[0][0])
    error = as_float64(error, device)
    cov = None if sigma is None else as_float64(sigma, device)
    for layers, steps in stretches:
        # the terms stacked: one batched product per factor and step, not one per term
        left, right = _flow_factors(as_float64_list(layers, device), cov)
        right = right.mT
        for _ in range(steps):
            error = error - lr * (left @ error @ right).sum(0)
    return error


def bottom_overlap(operator: KroneckerSum, error: ArrayLike, count: int) -> float:
    """The fraction of ``||E||_F^2`` (``E`` ``a x b``) in the span of the ``count`` eigenvectors
    of a symmetric ``operator`` with the smallest eigenvalues, in float64 on the CPU.

    A Kronecker sum proper, ``A (x) I + I (x) B`` (every term has an identity factor, as ``K``
    has for depth <= 2 with ``Sigma = I``), in closed form: its eigenpairs are
    ``(alpha_i + beta_j, u_i v_j^T)`` from the ``a x a`` and ``b x b`` eigenproblems. Any other
    from its dense matrix, by LAPACK's subset solver (only the ``count`` smallest)."""
    a, b = operator.factor_dims
    flat = np.asarray(as_float64(error, device_of(operator.left)).cpu()).reshape(a, b)
    total = float(np.sum(flat**2))
    parts = _kronecker_sum_parts(operator)
    if parts is not None:
        alpha, u = np.linalg.eigh(parts[0])
        beta, v = np.linalg.eigh(parts[1])
        eigenvalues = (alpha[:, None] + beta[None, :]).reshape(-1)
        bottom = np.argsort(eigenvalues, kind="stable")[:count]
        return float(np.sum((u.T @ flat @ v).reshape(-1)[bottom] ** 2) / total)
    dense = np.asarray(operator.dense().cpu())
    _, vectors = scipy.linalg.eigh(dense, subset_by_index=[0, count - 1], driver="evx")
    inside = vectors.T @ flat.reshape(-1)
    return float(inside @ inside / total)


def _kronecker_sum_parts(operator: KroneckerSum) -> tuple[np.ndarray, np.ndarray] | None:
    """``(A, B)`` with ``operator = A (x) I + I (x) B``, if every term has an identity factor
    (compared exactly); None otherwise."""
    a, b = operator.factor_dims
    left, right = np.zeros((a, a)), np.zeros((b, b))
    for lhs, rhs in zip(operator.left, operator.right, strict=True):
        lhs, rhs = np.asarray(lhs.cpu(), dtype=np.float64), np.asarray(rhs.cpu(), np.float64)
        if np.array_equal(rhs, np.eye(b)):
            left += lhs
        elif np.array_equal(lhs, np.eye(a)):
            right += rhs
        else:
            return None
    return left, right


def product_of(layers: Sequence[torch.Tensor]) -> torch.Tensor:
    """``W_L ... W_1`` of ``[W_1, ..., W_L]``."""
    product = layers[0]
    for weight in layers[1:]:
        product = weight @ product
    return product


def mean_flow(
    layers: Sequence[ArrayLike],
    target: ArrayLike,
    lr: float,
    steps: int,
    sigma: ArrayLike | None = None,
) -> list[torch.Tensor]:
    """The layers after ``steps`` steps of gradient descent of size ``lr`` on every layer, on
    the population loss ``1/2 E||P x - W* x||^2`` (``sigma`` None: ``Sigma = I``), in float64:
    online SGD's mean dynamics, along which the product moves by ``-lr K(E)`` with ``K`` of
    the current layers (the GN operator taken along its own trajectory, not frozen). Layers
    and target may carry leading batch axes (one net per index)."""
    device = device_of(layers)
    weights = as_float64_list(layers, device)
    target = as_float64(target, device)
    cov = None if sigma is None else as_float64(sigma, device)
    for _ in range(steps):
        outer, inner = _partial_products_or_none(weights)
        error = weights[0] if outer[0] is None else outer[0] @ weights[0]
        error = error - target if cov is None else (error - target) @ cov
        steps_taken = []
        for w, a, c in zip(weights, outer, inner, strict=True):
            gradient = error if a is None else a.mT @ error
            gradient = gradient if c is None else gradient @ c.mT
            steps_taken.append(torch.add(w, gradient, alpha=-lr))
        weights = steps_taken
    return weights


def _partial_products_or_none(weights: list[torch.Tensor]) -> tuple[list, list]:
    """:func:`matcond.gauss_newton.linear.partial_products` with None for each identity (the
    outer product of the last layer, the inner one of the first): fewer products per step."""
    inner = [None]
    for weight in weights[:-1]:
        inner.append(weight if inner[-1] is None else weight @ inner[-1])
    outer = [None]
    for weight in reversed(weights[1:]):
        outer.append(weight if outer[-1] is None else outer[-1] @ weight)
    return outer[::-1], inner


def _spectrum_rows(product: torch.Tensor, target_s: np.ndarray, rank_rtol: float) -> list[tuple]:
    """``(component, trained, target, error)`` of κ
    (:func:`matcond.condition_number.components.condition_number`, as the per-trial tables compute
    it) and of the smallest singular value; a product that overflowed (a prediction whose steps
    diverge) has infinite κ and error."""
    if not bool(torch.isfinite(product).all()):
        return [("condition_number", math.inf, math.nan, math.inf)] + [
            ("smallest_singular_value", math.nan, math.nan, math.nan)
        ]
    s = torch.linalg.svdvals(product).numpy()
    kappa = condition_number(s, rank_rtol)
    kappa_star = condition_number(target_s, rank_rtol)
    s_min, s_star = float(s[-1]), float(target_s[-1])
    return [
        ("condition_number", kappa, kappa_star, abs(kappa - kappa_star) / kappa_star),
        ("smallest_singular_value", s_min, s_star, abs(s_min - s_star) / s_star),
    ]


def _recorded_stretches(weights: Mapping[str, np.ndarray], spec: Mapping) -> list[tuple]:
    """``(saved weights' key prefix, steps)`` from each recorded epoch's saved weights to the
    next ([] if none were saved)."""
    if not any(key.startswith("epoch") for key in weights):
        return []
    stages = exp7_stages(weights, ["recorded"], spec)
    epochs = [epoch for _, _, epoch in stages] + [spec["epochs"]]
    return [
        (prefix, (stop - start) * spec["steps_per_epoch"])
        for (_, prefix, start), stop in zip(stages, epochs[1:], strict=True)
        if stop > start
    ]


def noise_floor(spec: Mapping) -> torch.Tensor:
    """One draw (seeded by the trial's seed) of the additive label noise that the one-matrix
    theory leaves in a product trained by ``spec``'s SGD: i.i.d. entries of the std of
    :func:`matcond.condition_number.theory.noise_model` without its init part (the layers' init is
    in
    :func:`mean_flow`). A floor the mean dynamics do not see."""
    steps, shape = spec["epochs"] * spec["steps_per_epoch"], (spec["dim"], spec["dim"])
    try:
        model = noise_model(
            spec["lr"], steps, spec["batch_size"], spec["noise_std"], 0, spec["dim"]
        )
    except OverflowError:  # a step far past stability: the floor diverges with the steps
        return torch.full(shape, math.inf, dtype=torch.float64)
    generator = torch.Generator().manual_seed(spec["seed"])
    return model.entry_std * torch.randn(shape, generator=generator, dtype=torch.float64)


def prediction_rows(
    trials: Sequence[tuple[Mapping[str, np.ndarray], Mapping, bool]],
    bottom_fraction: float,
    overlap_seeds: int | None = None,
) -> pd.DataFrame:
    """Deep linear trials of one setting, each ``(saved weights, spec, diverged)`` (the specs
    differ in their seed only): their trained products against the predictions of
    :data:`PREDICTIONS`, in the per-trial tables' layout: the trial's settings, ``matrix``
    (``product`` or a prediction), ``epoch`` (the last), ``component`` (:data:`QUANTITIES`,
    and for the trained product ``bottom_overlap``: the share of ``||P_T - W*||_F^2`` in the
    span of the ``bottom_fraction`` of the initial GN operator's eigenvectors with the
    smallest eigenvalues, its chance level as ``target``; measured for the trials whose seed is
    below ``overlap_seeds``, None: every trial, NaN for the others), ``trained``, ``target``,
    ``error`` and ``diverged`` (the training's flag, or non-finite trained weights: the trained
    product's values are NaN). The predictions of all trials are computed as one batch; each
    trial's values are its own, whatever the other trials are."""
    weights = [w for w, _, _ in trials]
    spec = trials[0][1]
    initial = _stacked(weights, "initial", spec)
    target = _stacked_matrix(weights, "target.product")
    steps, lr = spec["epochs"] * spec["steps_per_epoch"], spec["lr"]
    start_error = product_of(initial) - target
    # measured: the product as the trained net computed it (the per-trial tables' matrix)
    products = {"product": _stacked_matrix(weights, "final.product")}
    products["predicted_init"] = target + predicted_error([(initial, steps)], start_error, lr)
    products |= _predicted_recorded(weights, spec, start_error, lr, target)
    products["predicted_flow"] = product_of(mean_flow(initial, target, lr, steps))
    noise = torch.stack([noise_floor(trial_spec) for _, trial_spec, _ in trials])
    products["predicted_noise"] = products["predicted_flow"] + noise
    count = max(1, round(bottom_fraction * target[0].numel()))
    names = [k for k, v in spec.items() if not isinstance(v, list)]
    rows = []
    for i, (trial_weights, trial_spec, flagged) in enumerate(trials):
        final = exp7_layers(trial_weights, "final", spec)
        diverged = bool(flagged) or not all(np.isfinite(w).all() for w in final)
        settings = tuple(trial_spec[name] for name in names)
        target_s = torch.linalg.svdvals(target[i]).numpy()
        for matrix, product in products.items():
            if product[i] is None:
                continue  # no recorded weights saved by this trial: no prediction (b)
            if diverged and matrix == "product":
                spectrum = [(name, math.nan, math.nan, math.nan) for name in QUANTITIES]
            else:
                spectrum = _spectrum_rows(product[i], target_s, spec["rank_rtol"])
            rows += [(*settings, matrix, *row, diverged) for row in spectrum]
        overlap = math.nan
        if not diverged and (overlap_seeds is None or trial_spec["seed"] < overlap_seeds):
            operator = flow_kronecker([layer[i] for layer in initial])
            overlap = bottom_overlap(operator, products["product"][i] - target[i], count)
        chance = count / target[0].numel()
        rows.append((*settings, "product", "bottom_overlap", overlap, chance, math.nan, diverged))
    columns = ["matrix", "component", "trained", "target", "error", "diverged"]
    table = pd.DataFrame(rows, columns=[*names, *columns])
    table.insert(len(names) + 1, "epoch", spec["epochs"])
    return table


def _stacked_matrix(weights: Sequence[Mapping[str, np.ndarray]], key: str) -> torch.Tensor:
    """Every trial's saved matrix ``key``, ``(trials, rows, columns)`` in float64."""
    return torch.stack([torch.as_tensor(w[key], dtype=torch.float64) for w in weights])


def _stacked(weights: Sequence[Mapping[str, np.ndarray]], stage: str, spec: Mapping) -> list:
    """``[W_1, ..., W_L]`` at ``stage`` (a saved weights' key prefix), each
    ``(trials, rows, columns)`` in float64."""
    per_trial = [exp7_layers(w, stage, spec) for w in weights]
    return [
        torch.stack([torch.as_tensor(layers[index], dtype=torch.float64) for layers in per_trial])
        for index in range(len(per_trial[0]))
    ]


def _predicted_recorded(
    weights: Sequence[Mapping[str, np.ndarray]],
    spec: Mapping,
    start_error: torch.Tensor,
    lr: float,
    target: torch.Tensor,
) -> dict[str, list]:
    """Prediction (b)'s product of every trial (None for a trial that saved no recorded
    weights; {} if none did), computed for the trials with the same recorded epochs as one
    batch."""
    schedules = [tuple(_recorded_stretches(w, spec)) for w in weights]
    if not any(schedules):
        return {}
    products: list = [None] * len(weights)
    for schedule in dict.fromkeys(s for s in schedules if s):
        members = [i for i, s in enumerate(schedules) if s == schedule]
        group = [weights[i] for i in members]
        stretches = [(_stacked(group, prefix, spec), steps) for prefix, steps in schedule]
        errors = predicted_error(stretches, start_error[members], lr)
        for i, error in zip(members, errors, strict=True):
            products[i] = target[i] + error
    return {"predicted_recorded": products}


def _ratio_of_medians(predicted, measured, axis=-1):
    return np.median(predicted, axis=axis) / np.median(measured, axis=axis)


CELL_COLUMNS = ["model", "depth", "dim", "init_scale", "optimizer", "lr"]


def summary_table(trials: pd.DataFrame) -> pd.DataFrame:
    """Per cell (:data:`CELL_COLUMNS` and any other setting that varies), quantity
    (:data:`QUANTITIES`) and prediction: the trained product's median over its finite,
    undiverged trials with its exact 95 % interval, the prediction's median over the same
    trials, and the ratio predicted / measured of the medians with its paired bootstrap
    interval; and the cell's median ``bottom_overlap`` beside its chance level."""
    settings = [
        c
        for c in trials.columns
        if c
        not in ("seed", "matrix", "epoch", "component", "trained", "target", "error", "diverged")
    ]
    varying = [c for c in settings if trials[c].nunique(dropna=False) > 1]
    cells = [c for c in CELL_COLUMNS if c in settings] + [
        c for c in varying if c not in CELL_COLUMNS
    ]
    rows, pairs = [], []
    for key, cell in trials.groupby(cells, sort=True, dropna=False):
        base = dict(zip(cells, key, strict=True))
        base["init_per_sqrt_dim"] = base["init_scale"] * math.sqrt(base["dim"])
        overlap = cell[cell["component"] == "bottom_overlap"]
        base["bottom_overlap_median"] = float(overlap["trained"].median())
        base["bottom_overlap_chance"] = float(overlap["target"].median())
        base["n_diverged"] = int(overlap["diverged"].sum())
        for component, field in QUANTITIES.items():
            values = cell[cell["component"] == component].pivot(
                index="seed", columns="matrix", values=field
            )
            for prediction in PREDICTIONS:
                if prediction not in values:
                    continue
                pair = values[["product", prediction]].dropna()
                measured, predicted = pair["product"].to_numpy(), pair[prediction].to_numpy()
                row = {**base, "component": component, "prediction": prediction}
                row["prediction_label"], row["n"] = PREDICTIONS[prediction], len(pair)
                row["measured_median"] = float(np.median(measured)) if len(pair) else math.nan
                row["predicted_median"] = float(np.median(predicted)) if len(pair) else math.nan
                with np.errstate(divide="ignore", invalid="ignore"):
                    row["ratio"] = row["predicted_median"] / row["measured_median"]
                rows.append(row)
                pairs.append((predicted, measured))
    _add_intervals(rows, pairs)
    return pd.DataFrame(rows)


def _add_intervals(rows: list[dict], pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Each row's intervals, bootstrapped for all rows of one trial count at once (a group's
    interval does not depend on the others: :func:`matcond.stats.summary.bootstrap_ci`)."""
    by_size: dict[int, list[int]] = {}
    for i, (_, measured) in enumerate(pairs):
        by_size.setdefault(len(measured), []).append(i)
    for index in by_size.values():
        predicted = np.stack([pairs[i][0] for i in index])
        measured = np.stack([pairs[i][1] for i in index])
        low, high = bootstrap_ci([measured], np.median)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio_low, ratio_high = bootstrap_ci(
                [predicted, measured], _ratio_of_medians, paired=True
            )
        for j, i in enumerate(index):
            rows[i]["measured_ci_low"], rows[i]["measured_ci_high"] = low[j], high[j]
            rows[i]["ratio_ci_low"], rows[i]["ratio_ci_high"] = ratio_low[j], ratio_high[j]


def predicted_kappa_errors(specs: Sequence[Mapping]) -> np.ndarray:
    """The mean dynamics' (:func:`mean_flow`) product κ error of each trial of one deep linear
    setting (``specs``, one per seed), from the initial layers and the target that its
    training draws, without training it."""
    model = build_model(list(specs), torch.device("cpu"))
    steps = specs[0]["epochs"] * specs[0]["steps_per_epoch"]
    errors = []
    for i, spec in enumerate(specs):
        initial = [w.detach()[i].double() for w in model.layers]
        target = torch.as_tensor(teacher_weights(spec)["product"], dtype=torch.float64)
        trained = product_of(mean_flow(initial, target, spec["lr"], steps))
        target_s = torch.linalg.svdvals(target).numpy()
        errors.append(_spectrum_rows(trained, target_s, spec["rank_rtol"])[0][3])
    return np.array(errors)
