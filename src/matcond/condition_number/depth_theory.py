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
from matcond.gauss_newton.linear import partial_products
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
    outer, inner = partial_products(as_float64_list(layers, device))
    right = [c.T @ c for c in inner]
    if sigma is not None:
        cov = as_float64(sigma, device)
        right = [gram @ cov for gram in right]
    return KroneckerSum([a @ a.T for a in outer], right)


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
    operator of ``layers`` held fixed."""
    error = as_float64(error, device_of(stretches[0][0]))
    for layers, steps in stretches:
        operator = flow_kronecker(layers, sigma)
        # the terms stacked: one batched product per factor and step, not one per term
        left, right = torch.stack(operator.left), torch.stack(operator.right).mT
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
    the current layers (the GN operator taken along its own trajectory, not frozen)."""
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
            gradient = error if a is None else a.T @ error
            gradient = gradient if c is None else gradient @ c.T
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
    """``(layers, steps)`` from each recorded epoch's saved weights to the next ([] if none
    were saved)."""
    if not any(key.startswith("epoch") for key in weights):
        return []
    stages = exp7_stages(weights, ["recorded"], spec)
    epochs = [epoch for _, _, epoch in stages] + [spec["epochs"]]
    return [
        (exp7_layers(weights, prefix, spec), (stop - start) * spec["steps_per_epoch"])
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
    weights: Mapping[str, np.ndarray],
    spec: Mapping,
    bottom_fraction: float,
    diverged: bool = False,
) -> pd.DataFrame:
    """One deep linear trial's trained product against the predictions of
    :data:`PREDICTIONS`, in the per-trial tables' layout: the trial's settings, ``matrix``
    (``product`` or a prediction), ``epoch`` (the last), ``component`` (:data:`QUANTITIES`,
    and for the trained product ``bottom_overlap``: the share of ``||P_T - W*||_F^2`` in the
    span of the ``bottom_fraction`` of the initial GN operator's eigenvectors with the
    smallest eigenvalues, its chance level as ``target``), ``trained``, ``target``, ``error``
    and ``diverged`` (the training's flag, or non-finite trained weights: the trained product's
    values are NaN)."""
    settings = {k: v for k, v in spec.items() if not isinstance(v, list)}
    initial = [
        torch.as_tensor(w, dtype=torch.float64) for w in exp7_layers(weights, "initial", spec)
    ]
    final = [torch.as_tensor(w, dtype=torch.float64) for w in exp7_layers(weights, "final", spec)]
    target = torch.as_tensor(weights["target.product"], dtype=torch.float64)
    diverged = diverged or not all(bool(torch.isfinite(w).all()) for w in final)
    steps, lr = spec["epochs"] * spec["steps_per_epoch"], spec["lr"]
    start_error = product_of(initial) - target
    # measured: the product as the trained net computed it (the per-trial tables' matrix)
    products = {"product": torch.as_tensor(weights["final.product"], dtype=torch.float64)}
    products["predicted_init"] = target + predicted_error([(initial, steps)], start_error, lr)
    if stretches := _recorded_stretches(weights, spec):
        products["predicted_recorded"] = target + predicted_error(stretches, start_error, lr)
    products["predicted_flow"] = product_of(mean_flow(initial, target, lr, steps))
    products["predicted_noise"] = products["predicted_flow"] + noise_floor(spec)
    target_s = torch.linalg.svdvals(target).numpy()
    rows = []
    for matrix, product in products.items():
        if diverged and matrix == "product":
            spectrum = [(name, math.nan, math.nan, math.nan) for name in QUANTITIES]
        else:
            spectrum = _spectrum_rows(product, target_s, spec["rank_rtol"])
        rows += [(matrix, *row) for row in spectrum]
    size = target.numel()
    count = max(1, round(bottom_fraction * size))
    overlap = math.nan
    if not diverged:
        overlap = bottom_overlap(flow_kronecker(initial), products["product"] - target, count)
    rows.append(("product", "bottom_overlap", overlap, count / size, math.nan))
    table = pd.DataFrame(rows, columns=["matrix", "component", "trained", "target", "error"])
    table.insert(1, "epoch", spec["epochs"])
    for key, value in reversed(settings.items()):
        table.insert(0, key, value)
    table["diverged"] = diverged
    return table


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
