"""Why the condition number is poorly learned: a first-order theory of online SGD.

Setting (docs/theory.md, "The first-order theory"): a single matrix W (d x d)
learns W* by plain SGD with learning rate lr from W_0 with i.i.d. N(0, init_scale²) entries;
each of the T steps draws a fresh batch of B inputs x ~ N(0, I) and labels W* x + ε,
ε ~ N(0, noise_std² I), and follows the gradient of ½ mean_batch ||W x - y||². With
Δ_t = W_t - W* and S_t = X_tᵀX_t / B,

    Δ_{t+1} = Δ_t (I - lr S_t) + lr N_t,   N_t = E_tᵀ X_t / B,   E[S_t] = I.

Every step contracts a row vector a on average by q = 1 - lr, E[a (I - lr S_t)] = q a, and its
squared norm exactly by q₂ = 1 - 2 lr + lr² (1 + (d+1)/B), E||a (I - lr S_t)||² = q₂ ||a||²
(S_t is Wishart: E[S_t²] = (1 + (d+1)/B) I). So

    W_T = W* (I - P) + E,   P = Π_t (I - lr S_t),   E[P] = q^T I,

- m = 1 - q^T: on average every direction of W* is learned at the same relative rate;
- to first order P = q^T I - ε M with M = Σ_t (S_t - I) and ε = lr q^(T-1): multiplicative
  noise whose entries have variance T/B off the diagonal and 2T/B on it;
- E = W_0 P + lr Σ_t N_t Π_{s>t}(I - lr S_s): additive noise with i.i.d. entries of variance
  σ_E² = init_scale² q₂^T + noise_std² lr² (1 - q₂^T) / ((1 - q₂) B).

κ ignores the scale. First-order perturbation of the extreme singular values of m W*
(singular pairs (s_i, u_i, v_i)) gives

    δ log κ ≈ u_1ᵀ E v_1 / (m s_1) - u_nᵀ E v_n / (m s_n) + (ε/m) (v_1ᵀ M v_1 - v_nᵀ M v_n),

a normal variable with variance σ² = σ_E² (1/s_1² + 1/s_n²) / m² + 4 (ε/m)² T/B. Because s_n(W*)
shrinks like 1/d for square Gaussian-like targets, σ, and the median κ error, grow linearly in
d; without label noise (and with W_0 → 0) they vanish. The relative error of κ is
|exp(δ log κ) - 1|; over trials with different targets its distribution is the mixture of the
trials' |exp(σ_k Z) - 1|, whose median :func:`median_kappa_error` computes.

The row norms follow from the same model: row i of W* (I - P) has, exactly, mean squared norm
b_i² r² with r² = 1 - 2 q^T + q₂^T (b_i = ||W*_i,:||), so the rows are learned to a common
factor r (≈ m while lr (d+1)/B is small; below it for large d / B). E adds (d - 1) σ_E² across
each row (a bias, b_i r -> sqrt(b_i² r² + (d-1) σ_E²), taken at the mean b_i² = ||W*||_F² / d)
and σ_E² along it (a fluctuation), so with r' = sqrt(r² + (d-1) d σ_E² / ||W*||_F²)

    ||a - b|| / ||b|| ≈ sqrt((1 - r')² + d σ_E² / ||W*||_F² + 2 ε² T / B).

It does not apply to Adam, to weight decay, to corrective strategies or to deep models, and
the κ part is first order: it degrades where σ_E / (m s_n) is not small (the largest d, the
smallest s_n) and where lr · d / B is not small. Second order adds a small positive bias to
δ log κ (the noise pushes s_n down and s_1 up; about 0.2 σ in
tests/condition_number/test_theory.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import stats as scipy_stats

from matcond.core.arms import arm, matches
from matcond.stats.summary import STATISTICS, bootstrap_ci, headline


@dataclass(frozen=True)
class NoiseModel:
    """W_T ≈ W* (scale I + multiplicative M) + E with E's entries of std ``entry_std``;
    ``row_scale`` is r, the root-mean-square factor to which the rows are learned."""

    scale: float
    row_scale: float
    entry_std: float
    multiplicative: float
    steps: int
    batch_size: int


def applies(spec: dict) -> bool:
    """Whether the theory covers the trial: plain SGD on one matrix from a Gaussian init."""
    return (
        spec.get("model") == "linear"
        and spec.get("strategy") == "standard"
        and spec.get("optimizer") == "sgd"
        and spec.get("init") == "gaussian"
        and not spec.get("weight_decay")
    )


def noise_model(
    lr: float, steps: int, batch_size: int, noise_std: float, init_scale: float, dim: int
) -> NoiseModel:
    """The model of W_T after ``steps`` SGD steps at dimension ``dim`` (module docstring)."""
    q = 1.0 - lr
    q2 = 1.0 - 2.0 * lr + lr**2 * (1.0 + (dim + 1) / batch_size)
    label = noise_std**2 * lr**2 * (1.0 - q2**steps) / ((1.0 - q2) * batch_size)
    return NoiseModel(
        scale=1.0 - q**steps,
        row_scale=math.sqrt(max(1.0 - 2.0 * q**steps + q2**steps, 0.0)),
        entry_std=math.sqrt(init_scale**2 * q2**steps + label),
        multiplicative=lr * q ** (steps - 1),
        steps=steps,
        batch_size=batch_size,
    )


def log_kappa_std(model: NoiseModel, s_max: float, s_min: float) -> float:
    """Standard deviation of δ log κ for a target with extreme singular values s_max, s_min."""
    additive = (model.entry_std / model.scale) ** 2 * (s_max**-2 + s_min**-2)
    multiplicative = 4 * (model.multiplicative / model.scale) ** 2 * model.steps / model.batch_size
    return math.sqrt(additive + multiplicative)


def median_kappa_error(stds: np.ndarray) -> float:
    """Median of |exp(σ Z) - 1| over the mixture of the trials' σ (Z standard normal)."""
    stds = np.asarray(stds, dtype=np.float64)
    if stds.size == 0 or not np.all(np.isfinite(stds) & (stds > 0)):
        return math.nan

    def below(log_x: float) -> float:  # P(error <= x) - 1/2, increasing in x = exp(log_x)
        x = math.exp(log_x)
        low = np.log1p(-x) if x < 1 else -np.inf
        inside = scipy_stats.norm.cdf(np.log1p(x) / stds) - scipy_stats.norm.cdf(low / stds)
        return float(inside.mean()) - 0.5

    return math.exp(optimize.brentq(below, -700.0, 700.0, xtol=1e-12))


def row_norm_error(model: NoiseModel, dim: int, target_frobenius: float) -> float:
    """Expected relative error of the row norms (see the module docstring)."""
    spread = dim * model.entry_std**2 / target_frobenius**2
    learned = math.sqrt(model.row_scale**2 + (dim - 1) * spread)
    return math.sqrt(
        (1.0 - learned) ** 2 + spread + 2 * model.multiplicative**2 * model.steps / model.batch_size
    )


# The target's values the theory needs, read per trial from the per-trial tables.
TARGET_COMPONENTS = ("spectral_norm", "condition_number", "frobenius_norm")
SETTINGS = ("model", "strategy", "optimizer", "weight_decay", "lr", "steps_per_epoch")
SETTINGS += ("batch_size", "noise_std", "init_scale", "dim")
PREDICTED = ("condition_number", "row_norms")
# Settings every row of the prediction table carries, whether or not its experiment varies them.
DESCRIBED = ("dim", "lr", "batch_size", "noise_std", "init_scale")


def trial_inputs(table: pd.DataFrame, where: dict[str, Any]) -> pd.DataFrame:
    """One row per trial (index: seed) matching ``where``: the settings the theory reads, the
    number of SGD steps at the selected epoch, and the target's s_1, kappa and ||W*||_F."""
    epoch = where.get("epoch", table["epoch"].max())
    columns = {c: arm(table, {**where, "component": c}, "target") for c in TARGET_COMPONENTS}
    rows = table
    for key, value in {"matrix": "product", **where}.items():
        if key != "epoch":
            rows = rows[matches(rows[key], value)]
    settings = rows.groupby("seed").first().reindex(columns=[*SETTINGS, "init"])
    inputs = settings.join(pd.DataFrame(columns), how="inner")
    inputs["steps"] = epoch * inputs["steps_per_epoch"]
    return inputs


def predict(inputs: pd.DataFrame, component: str) -> float:
    """The theory's headline statistic of ``component``'s error over these trials.

    ``condition_number``: the median κ error (:func:`median_kappa_error`); ``row_norms``: the
    mean of :func:`row_norm_error`. NaN where the theory does not apply (:func:`applies`) or
    a target's κ is not finite.
    """
    if component not in PREDICTED:
        raise ValueError(f"the theory predicts {PREDICTED}, not {component!r}")
    trials = inputs.to_dict("records")  # one pass over the (arrow-backed) columns
    if inputs.empty or not all(applies(r) for r in trials):
        return math.nan
    models = [
        noise_model(
            r["lr"],
            int(r["steps"]),
            int(r["batch_size"]),
            r["noise_std"],
            r["init_scale"],
            int(r["dim"]),
        )
        for r in trials
    ]
    if component == "row_norms":
        errors = [
            row_norm_error(m, int(r["dim"]), r["frobenius_norm"])
            for m, r in zip(models, trials, strict=True)
        ]
        return float(np.mean(errors))
    stds = [
        log_kappa_std(m, r["spectral_norm"], r["spectral_norm"] / r["condition_number"])
        for m, r in zip(models, trials, strict=True)
    ]
    return median_kappa_error(np.array(stds))


# The held-out grid (config experiment theory_held_out, docs/theory.md "Held-out grid"): cells
# drawn at random from declared ranges, so that the theory is judged off the settings it was
# built on. Log-uniform for the scales, uniform for the noise and the length, a choice for
# the batch size; values rounded to 2 significant digits (epochs to tens).
HELD_OUT_SEED = 20261127
HELD_OUT_CELLS = 12
HELD_OUT_RANGES = {
    "dim": (24, 256),
    "lr": (0.003, 0.05),
    "init_scale": (0.005, 0.05),
    "noise_std": (0.0, 0.1),
    "epochs": (100, 400),
    "batch_size": (8, 16, 32, 64, 128),
}


def held_out_cells(seed: int = HELD_OUT_SEED, n: int = HELD_OUT_CELLS) -> list[dict]:
    """``n`` settings drawn from :data:`HELD_OUT_RANGES` with generator ``seed``: what the
    config's ``theory_held_out`` variants must be (tests/condition_number/test_theory.py holds them
    to it)."""
    rng = np.random.default_rng(seed)
    ranges = HELD_OUT_RANGES

    def log_uniform(low: float, high: float) -> float:
        return float(np.exp(rng.uniform(np.log(low), np.log(high))))

    def rounded(value: float) -> float:
        return float(f"{value:.2g}")

    cells = []
    for _ in range(n):
        cells.append(
            {
                "dim": int(round(log_uniform(*ranges["dim"]))),
                "lr": rounded(log_uniform(*ranges["lr"])),
                "init_scale": rounded(log_uniform(*ranges["init_scale"])),
                "noise_std": rounded(rng.uniform(*ranges["noise_std"])),
                "epochs": int(round(rng.uniform(*ranges["epochs"]), -1)),
                "batch_size": int(rng.choice(ranges["batch_size"])),
            }
        )
    return cells


THEORY_COLUMNS = ["experiment", "epoch", "component", "statistic", "measured", "ci_low"]
THEORY_COLUMNS += ["ci_high", "predicted", "agrees", "deviation", "n"]
# Columns of a per-trial table that are results, not settings.
RESULT_COLUMNS = {"seed", "matrix", "epoch", "component", "trained", "target", "error", "loss"}
RESULT_COLUMNS |= {"diverged", "diverged_epoch"}


def prediction_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Measured against predicted, per experiment cell, recorded epoch >= 1 and component.

    ``tables`` are per-trial tables by experiment. A cell is one combination of the settings
    that vary in its table; cells the theory does not cover are left out. ``measured`` is the
    headline statistic (median κ error, mean row-norm error) with its bootstrap interval,
    ``agrees`` whether the prediction lies inside it, ``deviation`` predicted / measured - 1.
    """
    rows = []
    for experiment, table in tables.items():
        settings = [c for c in table.columns if c not in RESULT_COLUMNS]
        swept = [c for c in settings if table[c].nunique(dropna=False) > 1]
        described = list(dict.fromkeys([*swept, *DESCRIBED]))  # every row says its setting
        cells = table[described].drop_duplicates().to_dict("records")
        for cell in cells:
            cell = {k: v for k, v in cell.items() if not pd.isna(v)}
            own = table
            for key, value in cell.items():
                own = own[matches(own[key], value)]
            # the cell's own epochs; the rows of one epoch hold all that where selects
            for epoch, at_epoch in own[own["epoch"] >= 1].groupby("epoch", sort=True):
                inputs = trial_inputs(at_epoch, {**cell, "epoch": epoch})  # per trial
                for component in PREDICTED:
                    where = {**cell, "epoch": epoch, "component": component}
                    predicted = predict(inputs, component)
                    if math.isnan(predicted):
                        continue
                    values = arm(at_epoch, where).to_numpy()
                    name = headline(component)
                    low, high = bootstrap_ci([values], STATISTICS[name])
                    measured = float(STATISTICS[name](values))
                    rows.append(
                        {
                            **cell,
                            "experiment": experiment,
                            "epoch": int(epoch),
                            "component": component,
                            "statistic": name,
                            "measured": measured,
                            "ci_low": float(low),
                            "ci_high": float(high),
                            "predicted": predicted,
                            "agrees": bool(low <= predicted <= high),
                            "deviation": predicted / measured - 1.0,
                            "n": values.size,
                        }
                    )
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=THEORY_COLUMNS)
    front = [c for c in THEORY_COLUMNS if c in table]
    return table[front + sorted(set(table.columns) - set(front))]
