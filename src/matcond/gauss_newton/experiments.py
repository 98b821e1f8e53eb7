r"""The GN paper's experiments at initialisation, and its bounds on exp7's trained weights.

Everything here turns settings (the ``gauss_newton`` block of the config) into tidy tables; the
mathematics is the library's (:mod:`matcond.gauss_newton`). Every κ is the pseudo-condition
number of ``G_O = (1/n) sum_i J_i^T J_i`` (MSE loss) in float64; every bound is reported beside
the exact value it bounds, with ``tightness = bound / exact`` (>= 1).

Data (``make_inputs``)
    ``digits``: scikit-learn's 8 x 8 digits (1797 x 64, 10 classes), pixels / 16 in [0, 1], not
    centred, with the 3 pixels that are 0 in every image dropped (d = 61: ``Sigma`` is then full
    rank and whitening gives orthonormal columns). A subsample of ``n`` rows is drawn without
    replacement by the data seed, the same rows for every network seed (a subsample can have
    more always-zero pixels: its ``Sigma`` is then rank deficient and ``kappa(Sigma)`` is, as
    every κ here, the pseudo-condition number). ``gaussian``: ``n x d``
    samples of ``N(0, I_d)`` (the data seed), ``k`` outputs. ``whitened``: the GN paper's
    ``X -> U V^T`` from the thin SVD ``X = U S V^T`` (zero singular values dropped), so
    ``Sigma = V V^T / n`` is isotropic: ``U V^T`` has orthonormal columns when ``n >= d`` (and
    orthonormal rows when ``n < d``).

Networks at initialisation
    Kaiming normal as PyTorch's ``kaiming_normal_`` with its defaults (``std = sqrt(2 / fan_in)``,
    no biases), float64, drawn from ``torch.Generator().manual_seed(seed)`` layer by layer, input
    layer first. A network with one seed is the same in every arm it is compared across (linear vs
    residual, whitened vs not, with vs without BatchNorm, every prune rate, every leaky slope).

Sweeps (``run_sweep``; one table per figure, columns in ``SWEEP_COLUMNS``, one row per network
unless said otherwise; every table has ``sweep, dataset, whitened, n_samples, d, k, seed`` and
the exact ``kappa``, ``rank``, ``rank_source`` (``analytic`` for linear and residual nets,
``tolerance`` where no formula is known: leaky ReLU, BatchNorm, pruned MLP), ``gap_at_cut``
(smallest kept over largest dropped eigenvalue), ``solver``, ``seconds``)
    ``fig2_depth`` (:func:`depth_sweep`): deep linear nets of depth ``L`` (``L - 1`` hidden layers)
    with ``width_rule`` ``fixed`` (``width = width_param``) or ``proportional``
    (``width = width_param * L``); ``bound_convex`` / ``bound_max`` (Lemma 2),
    ``tightness_convex`` / ``tightness_max``, ``kappa_sigma``, ``bound_seconds``.
    ``fig3_bounds``: the same at one width, plus (``per_layer``) the JSON lists ``term_per_layer``
    (``kappa^2(W^{L:l+1}) kappa^2(W^{l-1:1})``) and ``gamma_per_layer`` (appendix E).
    ``fig19_whitening``: the same at one width, whitened and not.
    ``fig5_residual`` (:func:`residual_sweep`): the linear net (``beta_rule = "0"``) and the
    residual nets ``(W_L + beta I) ... (W_1 + beta I)`` for each ``beta_rule`` in ``1``,
    ``1/sqrt(L)``, ``1/L`` on the same weights; bounds are Eq. (7) (Lemma 2 for ``beta = 0``).
    ``fig6_leaky_width`` / ``fig23_leaky_alpha`` (:func:`leaky_relu_sweep`): ``W LeakyReLU(V x)``
    per ``width`` and slope ``alpha``; ``bound`` (Lemma 4), ``tightness`` and the bound's terms.
    ``fig7_batchnorm`` (:func:`batchnorm_sweep`): ``W V x`` vs ``W BN(V x)`` per ``width``
    (``batchnorm`` False / True), κ from the autodiff reference. BatchNorm1d is in *eval* mode
    with its running statistics set to the mean and biased variance of ``V x`` over the ``n``
    samples: its forward values are those of training mode on the full batch, but each output
    depends on its own sample only, which the per-sample GN ``(1/n) sum_i J_i^T J_i`` (and the
    reference's per-sample Jacobian) needs. Training mode with a batch of one sample is undefined,
    and eval mode with the default running statistics (0, 1) is the identity at init. The BN
    affine parameters count as parameters; the derivative through the batch statistics is not
    taken.
    ``fig1_pruning`` (:func:`pruning_sweep`): a bias-free ReLU MLP on digits (``init``: Kaiming
    normal, or ``torch_default``, the draw of ``nn.Linear`` that the paper's I.1 used), pruned layer
    by layer by magnitude at init (the ``prune_rate`` fraction of smallest ``|w|`` of each matrix
    set to 0 and kept at 0); κ over the remaining weights (reference Jacobian restricted to them) on
    ``gn_samples`` training rows, then SGD on the MSE to one-hot labels (``1/2`` squared error
    summed over outputs, mean over the batch; mini-batches of the shuffled training set per epoch).
    One row per (prune rate, seed, epoch) with ``train_loss`` on the whole training set; the κ
    columns repeat along the epochs.

exp7 (:func:`exp7_rows`, :func:`exp7_table`)
    For a deep linear trial (depth ``L``) or the ReLU MLP (= leaky ReLU with ``alpha = 0``), at
    each stage (``initial``, ``final``) and for the inputs ``gaussian`` (``n`` samples of
    ``N(0, I_d)``, the training distribution) and ``whitened`` (the same samples whitened): the
    exact κ and one row per applicable bound: ``lemma2_convex``, ``lemma2_max`` (deep linear),
    ``lemma1`` (depth 2), ``lemma4`` (ReLU); columns ``EXP7_ROW_COLUMNS`` (``bound_value``,
    ``tightness``, ``kappa_sigma``, ``diverged``, ...). The summary over trials has one row per
    (model, depth, stage, inputs, n, bound) with the statistics of κ and of the tightness.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from matcond.gauss_newton.bounds import (
    BoundResult,
    leaky_relu_bound,
    lemma1_bound,
    lemma2_bound,
    residual_bound,
)
from matcond.gauss_newton.leaky_relu import leaky_relu_gn_spectrum
from matcond.gauss_newton.linear import linear_gn_spectrum
from matcond.gauss_newton.reference import network_jacobian, reference_gn_spectrum
from matcond.gauss_newton.residual import residual_gn_spectrum
from matcond.gauss_newton.solvers import dense_eigenvalues
from matcond.gauss_newton.spectrum import GNSpectrum, spectrum_from_eigenvalues

DIGITS_CLASSES = 10
DIGITS_SCALE = 16.0
EXP7_MODELS = ("deep_linear", "relu_mlp")
EXP7_INPUTS = ("gaussian", "whitened")
BETA_RULES: dict[str, Callable[[int], float]] = {
    "0": lambda depth: 0.0,
    "1": lambda depth: 1.0,
    "1/sqrt(L)": lambda depth: 1.0 / math.sqrt(depth),
    "1/L": lambda depth: 1.0 / depth,
}
Settings = Mapping[str, Any]


# --------------------------------------------------------------------------------------- data


def whiten(x: np.ndarray) -> np.ndarray:
    """``U V^T`` from the thin SVD of ``x`` (``n x d``), singular values <= ``max(n, d) eps
    s_max`` dropped: every kept direction gets singular value 1."""
    u, s, vh = np.linalg.svd(np.asarray(x, dtype=np.float64), full_matrices=False)
    keep = s > max(x.shape) * np.finfo(np.float64).eps * s.max()
    return u[:, keep] @ vh[keep]


def subsample(count: int, n: int | None, seed: int) -> np.ndarray:
    """Sorted indices of ``n`` of ``count`` rows drawn without replacement (all rows if None)."""
    if n is None or n >= count:
        return np.arange(count)
    return np.sort(np.random.default_rng(seed).choice(count, size=n, replace=False))


def digits_data(n: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(x, labels)``: digits pixels / 16 without the always-zero pixels, ``n`` rows."""
    from sklearn.datasets import load_digits

    x, labels = load_digits(return_X_y=True)
    x = x[:, (x != 0).any(axis=0)] / DIGITS_SCALE
    rows = subsample(x.shape[0], n, seed)
    return x[rows].astype(np.float64), labels[rows].astype(np.int64)


def gaussian_data(n: int, d: int, seed: int = 0) -> np.ndarray:
    """``n x d`` samples of ``N(0, I_d)``."""
    return np.random.default_rng(seed).standard_normal((n, d))


@dataclass(frozen=True)
class Inputs:
    """A data set as one sweep sees it: samples in the rows of ``x``, ``outputs`` = ``k``."""

    dataset: str
    whitened: bool
    x: np.ndarray
    outputs: int
    labels: np.ndarray | None = None

    def columns(self) -> dict[str, Any]:
        """The table columns that identify the data."""
        n, d = self.x.shape
        return {
            "dataset": self.dataset,
            "whitened": self.whitened,
            "n_samples": n,
            "d": d,
            "k": self.outputs,
        }


def make_inputs(dataset: str, whitened: bool, n: int | None, data: Settings) -> Inputs:
    """The ``digits`` or ``gaussian`` inputs (``n`` rows; None: all digits / the Gaussian
    default ``data["gaussian"]["n_samples"]``), whitened or not, drawn by ``data["seed"]``."""
    if dataset == "digits":
        x, labels = digits_data(n, data["seed"])
        outputs = DIGITS_CLASSES
    elif dataset == "gaussian":
        spec = data["gaussian"]
        x = gaussian_data(spec["n_samples"] if n is None else n, spec["dim"], data["seed"])
        labels, outputs = None, spec["outputs"]
    else:
        raise ValueError(f"unknown dataset {dataset!r}; use 'digits' or 'gaussian'")
    return Inputs(dataset, whitened, whiten(x) if whitened else x, outputs, labels)


def sweep_inputs(settings: Settings, data: Settings) -> Iterator[Inputs]:
    """Every (dataset, whitened) pair of a sweep's settings."""
    for dataset in settings["datasets"]:
        for whitened in settings["whiten"]:
            yield make_inputs(dataset, whitened, settings.get("n_samples"), data)


def seed_list(seeds: int | Sequence[int]) -> list[int]:
    """A seed count ``n`` means seeds ``0 .. n-1``; a list is taken as is."""
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)


# ------------------------------------------------------------------------------ initialisation


def kaiming_normal(dims: Sequence[int], seed: int) -> list[torch.Tensor]:
    """``[W_1, ..., W_L]``, ``W_l`` of shape ``dims[l] x dims[l-1]``, PyTorch Kaiming normal."""
    generator = torch.Generator().manual_seed(seed)
    weights = []
    for fan_in, fan_out in zip(dims[:-1], dims[1:], strict=True):
        weight = torch.empty(fan_out, fan_in, dtype=torch.float64)
        nn.init.kaiming_normal_(weight, generator=generator)
        weights.append(weight)
    return weights


def torch_default(dims: Sequence[int], seed: int) -> list[torch.Tensor]:
    """``[W_1, ..., W_L]`` drawn as ``nn.Linear`` draws its weight (Kaiming uniform, a = sqrt 5)."""
    generator = torch.Generator().manual_seed(seed)
    weights = []
    for fan_in, fan_out in zip(dims[:-1], dims[1:], strict=True):
        weight = torch.empty(fan_out, fan_in, dtype=torch.float64)
        nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)
        weights.append(weight)
    return weights


INITS = {"kaiming_normal": kaiming_normal, "torch_default": torch_default}


# ----------------------------------------------------------------------------------- records


def spectrum_columns(spectrum: GNSpectrum) -> dict[str, Any]:
    """The exact result's columns."""
    return {
        "kappa": spectrum.kappa,
        "rank": spectrum.rank,
        "rank_source": spectrum.rank_source,
        "gap_at_cut": spectrum.gap_at_cut,
        "solver": spectrum.solver,
        "seconds": spectrum.seconds,
    }


def linear_record(
    weights: Sequence[torch.Tensor], x: np.ndarray, beta: float = 0.0, per_layer: bool = False
) -> dict[str, Any]:
    """Exact κ and the convex / max bounds (Lemma 2, or Eq. 7 for ``beta != 0``) of one net."""
    if beta:
        exact = residual_gn_spectrum(weights, beta, x)
        start = time.perf_counter()
        convex = residual_bound(weights, beta, x, form="convex")
        loose = residual_bound(weights, beta, x, form="max")
    else:
        exact = linear_gn_spectrum(weights, x)
        start = time.perf_counter()
        convex = lemma2_bound(weights, x, form="convex")
        loose = lemma2_bound(weights, x, form="max")
    record = {
        **spectrum_columns(exact),
        "bound_convex": convex.value,
        "bound_max": loose.value,
        "tightness_convex": convex.tightness(exact),
        "tightness_max": loose.tightness(exact),
        "kappa_sigma": convex.components["kappa_sigma"],
        "bound_seconds": time.perf_counter() - start,
    }
    if per_layer:
        record["term_per_layer"] = json.dumps(list(convex.components["term"]))
        record["gamma_per_layer"] = json.dumps(list(convex.components["gamma"]))
    return record


def leaky_record(weights: Sequence[torch.Tensor], x: np.ndarray, alpha: float) -> dict[str, Any]:
    """Exact κ of ``W LeakyReLU_alpha(V x)`` and Lemma 4 with its terms."""
    exact = leaky_relu_gn_spectrum(weights, x, alpha)
    start = time.perf_counter()
    bound = leaky_relu_bound(weights, x, alpha)
    terms = {
        key: bound.components[key]
        for key in ("sigma_min_sq_x", "sigma_min_sq_w", "lambda_min_gamma", "lambda_max_gamma")
    }
    return {
        **spectrum_columns(exact),
        "bound": bound.value,
        "tightness": bound.tightness(exact),
        **terms,
        "bound_seconds": time.perf_counter() - start,
    }


# ------------------------------------------------------------------------------------ sweeps


def depth_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ and Lemma 2 of deep linear nets vs depth, per fixed and depth-proportional width."""
    schemes = [("fixed", m) for m in settings["widths"]]
    schemes += [("proportional", c) for c in settings.get("width_factors", [])]
    rows = []
    for inputs in sweep_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        for rule, param in schemes:
            for depth in settings["depths"]:
                width = param if rule == "fixed" else param * depth
                dims = [d, *[width] * (depth - 1), k]
                for seed in seed_list(settings["seeds"]):
                    record = linear_record(
                        kaiming_normal(dims, seed),
                        inputs.x,
                        per_layer=settings.get("per_layer", False),
                    )
                    rows.append(
                        {
                            **inputs.columns(),
                            "width_rule": rule,
                            "width_param": param,
                            "width": width,
                            "depth": depth,
                            "seed": seed,
                            **record,
                        }
                    )
    return pd.DataFrame(rows)


def one_width(settings: Settings) -> dict[str, Any]:
    """Settings with a single ``width`` as the depth sweep's ``widths``."""
    return {**settings, "widths": [settings["width"]], "width_factors": []}


def residual_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ and Eq. (7) of linear residual nets per skip weight rule vs depth (and the plain net)."""
    rows = []
    for inputs in sweep_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        for depth in settings["depths"]:
            dims = [d, *[settings["width"]] * (depth - 1), k]
            for seed in seed_list(settings["seeds"]):
                weights = kaiming_normal(dims, seed)
                for rule in ["0", *settings["betas"]]:
                    beta = BETA_RULES[rule](depth)
                    rows.append(
                        {
                            **inputs.columns(),
                            "width": settings["width"],
                            "depth": depth,
                            "seed": seed,
                            "beta_rule": rule,
                            "beta": beta,
                            **linear_record(weights, inputs.x, beta=beta),
                        }
                    )
    return pd.DataFrame(rows)


def leaky_relu_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ and Lemma 4 of one-hidden-layer leaky-ReLU nets per width and slope."""
    rows = []
    for inputs in sweep_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        for width in settings["widths"]:
            for seed in seed_list(settings["seeds"]):
                weights = kaiming_normal([d, width, k], seed)
                for alpha in settings["alphas"]:
                    rows.append(
                        {
                            **inputs.columns(),
                            "width": width,
                            "alpha": float(alpha),
                            "seed": seed,
                            **leaky_record(weights, inputs.x, float(alpha)),
                        }
                    )
    return pd.DataFrame(rows)


def one_hidden_linear(
    weights: Sequence[torch.Tensor], x: np.ndarray, batchnorm: bool
) -> nn.Sequential:
    """``W V x`` or ``W BN(V x)`` (BatchNorm1d in eval mode with the full-batch statistics)."""
    v, w = weights
    hidden = nn.Linear(v.shape[1], v.shape[0], bias=False, dtype=torch.float64)
    out = nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=torch.float64)
    with torch.no_grad():
        hidden.weight.copy_(v)
        out.weight.copy_(w)
    if not batchnorm:
        return nn.Sequential(hidden, out)
    norm = nn.BatchNorm1d(v.shape[0], dtype=torch.float64)
    with torch.no_grad():
        pre = torch.as_tensor(x, dtype=torch.float64) @ v.T
        norm.running_mean.copy_(pre.mean(dim=0))
        norm.running_var.copy_(pre.var(dim=0, unbiased=False))
    return nn.Sequential(hidden, norm, out).eval()


def batchnorm_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ of a one-hidden-layer linear net with and without BatchNorm per width (reference)."""
    rows = []
    for inputs in sweep_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        for width in settings["widths"]:
            for seed in seed_list(settings["seeds"]):
                weights = kaiming_normal([d, width, k], seed)
                for batchnorm in (False, True):
                    model = one_hidden_linear(weights, inputs.x, batchnorm)
                    spectrum = reference_gn_spectrum(model, inputs.x)
                    rows.append(
                        {
                            **inputs.columns(),
                            "width": width,
                            "seed": seed,
                            "batchnorm": batchnorm,
                            "n_params": sum(p.numel() for p in model.parameters()),
                            **spectrum_columns(spectrum),
                        }
                    )
    return pd.DataFrame(rows)


class MaskedMLP(nn.Module):
    """Bias-free ReLU MLP ``W_L relu(... relu(W_1 x))`` with fixed 0/1 masks on its weights."""

    def __init__(self, weights: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]) -> None:
        super().__init__()
        self.weights = nn.ParameterList(
            [nn.Parameter((w * m).clone()) for w, m in zip(weights, masks, strict=True)]
        )
        self.masks = [m.to(torch.float64) for m in masks]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the net to the rows of ``x``."""
        for index, weight in enumerate(self.weights):
            x = x @ weight.T
            if index < len(self.weights) - 1:
                x = torch.relu(x)
        return x

    def apply_masks(self) -> None:
        """Set the pruned weights back to 0."""
        with torch.no_grad():
            for weight, mask in zip(self.weights, self.masks, strict=True):
                weight.mul_(mask)


def magnitude_mask(weight: torch.Tensor, rate: float) -> torch.Tensor:
    """Boolean mask that drops the ``round(rate * numel)`` entries of smallest ``|w|``."""
    mask = torch.ones(weight.numel(), dtype=torch.bool)
    pruned = int(round(rate * weight.numel()))
    if pruned:
        mask[torch.argsort(weight.abs().flatten(), stable=True)[:pruned]] = False
    return mask.reshape(weight.shape)


def masked_gn_spectrum(model: MaskedMLP, x: np.ndarray) -> GNSpectrum:
    """κ of the GN over the unpruned weights: reference Jacobian restricted to them."""
    start = time.perf_counter()
    jac = network_jacobian(model, x)
    keep = torch.cat([m.flatten().bool() for m in model.masks])
    jac = jac[:, keep]
    gram = jac.T @ jac if jac.shape[1] <= jac.shape[0] else jac @ jac.T
    return spectrum_from_eigenvalues(
        dense_eigenvalues(gram / x.shape[0]),
        solver="reference_jacobian",
        seconds=time.perf_counter() - start,
    )


def mse_loss(model: nn.Module, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``1/2`` squared error summed over outputs, mean over the rows."""
    return 0.5 * ((model(x) - targets) ** 2).sum(dim=1).mean()


def train_losses(
    model: MaskedMLP, x: np.ndarray, labels: np.ndarray, settings: Settings, seed: int
):
    """Training loss on the whole training set before training and after each epoch of SGD."""
    inputs = torch.as_tensor(x, dtype=torch.float64)
    targets = nn.functional.one_hot(torch.as_tensor(labels), DIGITS_CLASSES).to(torch.float64)
    optimizer = torch.optim.SGD(model.parameters(), lr=settings["lr"])
    generator = torch.Generator().manual_seed(seed)
    losses = []
    with torch.no_grad():
        losses.append(float(mse_loss(model, inputs, targets)))
    for _ in range(settings["epochs"]):
        order = torch.randperm(inputs.shape[0], generator=generator)
        for batch in order.split(settings["batch_size"]):
            optimizer.zero_grad()
            mse_loss(model, inputs[batch], targets[batch]).backward()
            optimizer.step()
            model.apply_masks()
        with torch.no_grad():
            losses.append(float(mse_loss(model, inputs, targets)))
    return losses


def pruning_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ at init and the training loss of a magnitude-pruned ReLU MLP on digits per prune rate."""
    rows = []
    for whitened in settings["whiten"]:
        inputs = make_inputs("digits", whitened, settings["train_samples"], data)
        gn_x = inputs.x[: settings["gn_samples"]]
        dims = [inputs.x.shape[1], *settings["hidden"], inputs.outputs]
        for seed in seed_list(settings["seeds"]):
            weights = INITS[settings["init"]](dims, seed)
            for rate in settings["prune_rates"]:
                masks = [magnitude_mask(w, float(rate)) for w in weights]
                model = MaskedMLP(weights, masks)
                spectrum = masked_gn_spectrum(model, gn_x)
                kept = int(sum(int(m.sum()) for m in masks))
                losses = train_losses(model, inputs.x, inputs.labels, settings, seed)
                common = {
                    **inputs.columns(),
                    "gn_samples": gn_x.shape[0],
                    "hidden": json.dumps(list(settings["hidden"])),
                    "init": settings["init"],
                    "prune_rate": float(rate),
                    "seed": seed,
                    "n_params": kept,
                    **spectrum_columns(spectrum),
                }
                rows += [
                    {**common, "epoch": epoch, "train_loss": loss}
                    for epoch, loss in enumerate(losses)
                ]
    return pd.DataFrame(rows)


DATA_COLUMNS = ["sweep", "dataset", "whitened", "n_samples", "d", "k"]
EXACT_COLUMNS = ["kappa", "rank", "rank_source", "gap_at_cut", "solver", "seconds"]
LINEAR_COLUMNS = [
    *EXACT_COLUMNS,
    "bound_convex",
    "bound_max",
    "tightness_convex",
    "tightness_max",
    "kappa_sigma",
    "bound_seconds",
]
DEPTH_COLUMNS = [*DATA_COLUMNS, "width_rule", "width_param", "width", "depth", "seed"]
LEAKY_COLUMNS = [
    *DATA_COLUMNS,
    "width",
    "alpha",
    "seed",
    *EXACT_COLUMNS,
    "bound",
    "tightness",
    "sigma_min_sq_x",
    "sigma_min_sq_w",
    "lambda_min_gamma",
    "lambda_max_gamma",
    "bound_seconds",
]
# The columns of every sweep's table, in order (the module docstring says what they mean).
SWEEP_COLUMNS = {
    "fig1_pruning": [
        *DATA_COLUMNS,
        "gn_samples",
        "hidden",
        "init",
        "prune_rate",
        "seed",
        "n_params",
        *EXACT_COLUMNS,
        "epoch",
        "train_loss",
    ],
    "fig2_depth": [*DEPTH_COLUMNS, *LINEAR_COLUMNS],
    "fig3_bounds": [*DEPTH_COLUMNS, *LINEAR_COLUMNS, "term_per_layer", "gamma_per_layer"],
    "fig5_residual": [
        *DATA_COLUMNS,
        "width",
        "depth",
        "seed",
        "beta_rule",
        "beta",
        *LINEAR_COLUMNS,
    ],
    "fig6_leaky_width": LEAKY_COLUMNS,
    "fig7_batchnorm": [
        *DATA_COLUMNS,
        "width",
        "seed",
        "batchnorm",
        "n_params",
        *EXACT_COLUMNS,
    ],
    "fig19_whitening": [*DEPTH_COLUMNS, *LINEAR_COLUMNS],
    "fig23_leaky_alpha": LEAKY_COLUMNS,
}

SWEEPS: dict[str, Callable[[Settings, Settings], pd.DataFrame]] = {
    "fig1_pruning": pruning_sweep,
    "fig2_depth": depth_sweep,
    "fig3_bounds": lambda s, d: depth_sweep({**one_width(s), "per_layer": True}, d),
    "fig5_residual": residual_sweep,
    "fig6_leaky_width": leaky_relu_sweep,
    "fig7_batchnorm": batchnorm_sweep,
    "fig19_whitening": lambda s, d: depth_sweep(one_width(s), d),
    "fig23_leaky_alpha": leaky_relu_sweep,
}


def run_sweep(name: str, settings: Settings, data: Settings) -> pd.DataFrame:
    """The table of sweep ``name`` (``SWEEPS``) with its name in column ``sweep``."""
    if name not in SWEEPS:
        raise ValueError(f"unknown sweep {name!r}; choose from {sorted(SWEEPS)}")
    table = SWEEPS[name](settings, data)
    table.insert(0, "sweep", name)
    return table[SWEEP_COLUMNS[name]]


# -------------------------------------------------------------------------------------- exp7


def exp7_applies(spec: Settings) -> bool:
    """Whether a trial's model has GN bounds here (deep linear nets and the ReLU MLP)."""
    return spec["model"] in EXP7_MODELS


def exp7_layers(weights: Mapping[str, np.ndarray], stage: str, spec: Settings) -> list[np.ndarray]:
    """``[W_1, ..., W_L]`` (input layer first) of a trial at ``stage`` from its saved weights."""
    layers = 2 if spec["model"] == "relu_mlp" else spec.get("depth", 1)
    if layers == 1:
        return [np.asarray(weights[f"{stage}.product"])]
    return [np.asarray(weights[f"{stage}.layer{index}"]) for index in range(1, layers + 1)]


def exp7_bound_names(model: str, depth: int) -> list[str]:
    """The bounds that apply to a net (module docstring), in table order."""
    if model == "relu_mlp":
        return ["lemma4"]
    return ["lemma2_convex", "lemma2_max", *(["lemma1"] if depth == 2 else [])]


def exp7_bounds(layers: Sequence[np.ndarray], x: np.ndarray, model: str) -> dict[str, BoundResult]:
    """Every bound of :func:`exp7_bound_names` for the net ``layers`` on the samples ``x``."""
    compute = {
        "lemma4": lambda: leaky_relu_bound(layers, x, 0.0),
        "lemma2_convex": lambda: lemma2_bound(layers, x, form="convex"),
        "lemma2_max": lambda: lemma2_bound(layers, x, form="max"),
        "lemma1": lambda: lemma1_bound(layers, x),
    }
    return {name: compute[name]() for name in exp7_bound_names(model, len(layers))}


def exp7_rows(
    weights: Mapping[str, np.ndarray], spec: Settings, settings: Settings
) -> pd.DataFrame:
    """Exact κ and every applicable bound of one exp7 trial, per stage and inputs.

    ``settings``: ``stages``, ``n_samples`` (deep linear), ``relu_n_samples``, ``data_seed``.
    Non-finite weights (a diverged trial) give rows of NaN with ``diverged`` True.
    """
    model = spec["model"]
    if not exp7_applies(spec):
        raise ValueError(f"no GN bounds for model {model!r}; use one of {EXP7_MODELS}")
    n = settings["relu_n_samples"] if model == "relu_mlp" else settings["n_samples"]
    samples = gaussian_data(n, spec["dim"], settings["data_seed"])
    data = {"gaussian": samples, "whitened": whiten(samples)}
    rows = []
    for stage in settings["stages"]:
        layers = exp7_layers(weights, stage, spec)
        diverged = not all(np.isfinite(w).all() for w in layers)
        for name, x in data.items():
            base = {
                "model": model,
                "depth": len(layers),
                "dim": spec["dim"],
                "seed": spec["seed"],
                "stage": stage,
                "inputs": name,
                "n_samples": x.shape[0],
                "diverged": diverged,
            }
            if diverged:
                rows += [
                    {**base, "bound": bound, "kappa": math.nan, "tightness": math.nan}
                    for bound in exp7_bound_names(model, len(layers))
                ]
                continue
            if model == "relu_mlp":
                exact = leaky_relu_gn_spectrum(layers, x, 0.0)
            else:
                exact = linear_gn_spectrum(layers, x)
            start = time.perf_counter()
            bounds = exp7_bounds(layers, x, model)
            bound_seconds = time.perf_counter() - start
            for bound_name, bound in bounds.items():
                rows.append(
                    {
                        **base,
                        "bound": bound_name,
                        **spectrum_columns(exact),
                        "bound_value": bound.value,
                        "tightness": bound.tightness(exact),
                        "kappa_sigma": bound.components.get("kappa_sigma", math.nan),
                        "bound_seconds": bound_seconds,
                    }
                )
    return pd.DataFrame(rows, columns=EXP7_ROW_COLUMNS)


EXP7_ROW_COLUMNS = [
    "model",
    "depth",
    "dim",
    "seed",
    "stage",
    "inputs",
    "n_samples",
    "diverged",
    "bound",
    *EXACT_COLUMNS,
    "bound_value",
    "tightness",
    "kappa_sigma",
    "bound_seconds",
]
EXP7_KEYS = ["model", "depth", "stage", "inputs", "n_samples", "bound"]
EXP7_STATS = ("mean", "std", "median", "q25", "q75")


def exp7_table(rows: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """Statistics over the trials of exp7 per (model, depth, stage, inputs, n, bound).

    ``kappa_*`` and ``tightness_*`` are :func:`matcond.stats.summarise` of the exact κ and of
    bound / exact over the trials that did not diverge (``n``; ``n_diverged`` left out;
    ``n_nonfinite``: an infinite bound, left out); ``tightness_min`` / ``_max`` over the finite
    ones; ``bound_median`` the median bound; ``solver`` the solvers used; ``seconds_mean`` the
    mean time of the exact κ.
    """
    from matcond.stats import summarise

    out = []
    for values, group in rows.groupby(EXP7_KEYS, sort=True):
        diverged = group["diverged"].to_numpy(bool)
        kappa = summarise(group["kappa"].to_numpy(float), diverged)
        tight = summarise(group["tightness"].to_numpy(float), diverged)
        kept = group[~diverged]
        finite = kept["tightness"][np.isfinite(kept["tightness"])]
        out.append(
            {
                **dict(zip(EXP7_KEYS, values, strict=True)),
                **{f"kappa_{key}": kappa[key] for key in EXP7_STATS},
                "bound_median": float(kept["bound_value"].median()) if len(kept) else math.nan,
                **{f"tightness_{key}": tight[key] for key in ("mean", "std", "median")},
                "tightness_min": float(finite.min()) if len(finite) else math.nan,
                "tightness_max": float(finite.max()) if len(finite) else math.nan,
                "n": kappa["n"],
                "n_diverged": kappa["n_diverged"],
                "n_nonfinite": tight["n_nonfinite"],
                "solver": ",".join(sorted(kept["solver"].astype(str).unique())),
                "seconds_mean": float(kept["seconds"].mean()) if len(kept) else math.nan,
            }
        )
    table = pd.DataFrame(out)
    stage_order = table["stage"].map({"initial": 0, "final": 1})
    table = table.assign(_stage=stage_order).sort_values(["model", "depth", "_stage", "inputs"])
    table = table.drop(columns="_stage").reset_index(drop=True)
    table.insert(0, "experiment", experiment)
    return table
