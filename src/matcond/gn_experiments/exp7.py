"""The GN bounds on exp7's trained weights (package docstring: ``exp7``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from matcond.gauss_newton.bounds import (
    BoundResult,
    leaky_relu_bound,
    lemma1_bound,
    lemma2_bound,
)
from matcond.gauss_newton.leaky_relu import leaky_relu_gn_spectrum
from matcond.gauss_newton.linear import linear_gn_spectrum
from matcond.gn_experiments.columns import EXACT_COLUMNS
from matcond.gn_experiments.data import Settings, gaussian_data, whiten
from matcond.gn_experiments.records import spectrum_columns
from matcond.stats.summary import summarise

EXP7_MODELS = ("deep_linear", "relu_mlp")


def exp7_applies(spec: Settings) -> bool:
    """Whether a trial's model has GN bounds here (deep linear nets and the ReLU MLP)."""
    return spec["model"] in EXP7_MODELS


def exp7_stages(
    weights: Mapping[str, np.ndarray], stages: Sequence[str], spec: Settings
) -> list[tuple[str, str, int]]:
    """``(stage, key prefix, epoch)`` of each stage asked for: ``initial`` (epoch 0), ``final``
    (the trial's last epoch) and ``recorded``, every epoch saved by ``save_recorded_weights``
    (an error naming the trial's setting if none was saved)."""
    out = []
    for stage in stages:
        if stage != "recorded":
            out.append((stage, stage, 0 if stage == "initial" else spec["epochs"]))
            continue
        epochs = sorted({int(key.split(".")[0][5:]) for key in weights if key.startswith("epoch")})
        if not epochs:
            raise ValueError(
                "no weights saved at the recorded epochs: the trial needs the setting "
                "save_recorded_weights: true"
            )
        out += [("recorded", f"epoch{epoch}", epoch) for epoch in epochs]
    return out


def exp7_layers(weights: Mapping[str, np.ndarray], stage: str, spec: Settings) -> list[np.ndarray]:
    """``[W_1, ..., W_L]`` (input layer first) of a trial from its saved weights, ``stage``
    the key prefix (``initial``, ``final``, ``epoch{e}``)."""
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

    ``settings``: ``stages`` (:func:`exp7_stages`), ``n_samples`` (deep linear),
    ``relu_n_samples``, ``data_seed``. Non-finite weights (a diverged trial) give rows of NaN
    with ``diverged`` True.
    """
    model = spec["model"]
    if not exp7_applies(spec):
        raise ValueError(f"no GN bounds for model {model!r}; use one of {EXP7_MODELS}")
    n = settings["relu_n_samples"] if model == "relu_mlp" else settings["n_samples"]
    samples = gaussian_data(n, spec["dim"], settings["data_seed"])
    data = {"gaussian": samples, "whitened": whiten(samples)}
    rows = []
    for stage, prefix, epoch in exp7_stages(weights, settings["stages"], spec):
        layers = exp7_layers(weights, prefix, spec)
        diverged = not all(np.isfinite(w).all() for w in layers)
        for name, x in data.items():
            base = {
                "model": model,
                "depth": len(layers),
                "dim": spec["dim"],
                "seed": spec["seed"],
                "stage": stage,
                "epoch": epoch,
                "inputs": name,
                "n_samples": x.shape[0],
                "diverged": diverged,
            }
            if diverged:
                rows += [
                    {
                        **base,
                        "bound": bound,
                        "kappa": math.nan,
                        "tightness": math.nan,
                        "reliable": False,
                        "reliability": "diverged",
                    }
                    for bound in exp7_bound_names(model, len(layers))
                ]
                continue
            if model == "relu_mlp":
                exact = leaky_relu_gn_spectrum(layers, x, 0.0)
            else:
                exact = linear_gn_spectrum(layers, x)
            bounds = exp7_bounds(layers, x, model)
            for bound_name, bound in bounds.items():
                rows.append(
                    {
                        **base,
                        "bound": bound_name,
                        **spectrum_columns(exact),
                        "bound_value": bound.value,
                        "tightness": bound.tightness(exact),
                        "kappa_sigma": bound.components.get("kappa_sigma", math.nan),
                    }
                )
    return pd.DataFrame(rows, columns=EXP7_ROW_COLUMNS)


EXP7_ROW_COLUMNS = [
    "model",
    "depth",
    "dim",
    "seed",
    "stage",
    "epoch",
    "inputs",
    "n_samples",
    "diverged",
    "bound",
    *EXACT_COLUMNS,
    "bound_value",
    "tightness",
    "kappa_sigma",
]
EXP7_KEYS = ["model", "depth", "stage", "epoch", "inputs", "n_samples", "bound"]
EXP7_STATS = ("mean", "std", "median", "q25", "q75")


def exp7_table(rows: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """Statistics over the trials of exp7 (or along training) per (model, depth, stage,
    epoch, inputs, n, bound).

    ``kappa_*`` and ``tightness_*`` are :func:`matcond.stats.summary.summarise` of the exact κ and
    of bound / exact over the trials that did not diverge (``n``; ``n_diverged`` left out;
    ``n_nonfinite``: an infinite bound, left out; ``n_unreliable``: trials whose exact κ is
    flagged, see :class:`matcond.gauss_newton.GNSpectrum`); ``tightness_min`` / ``_max`` over
    the finite ones; ``bound_median`` the median bound; ``solver`` the solvers used. No
    timings: the tables of identical runs are byte-identical (times are in the job logs).
    """
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
                "n_unreliable": int((~kept["reliable"].astype(bool)).sum()),
                "solver": ",".join(sorted(kept["solver"].astype(str).unique())),
            }
        )
    table = pd.DataFrame(out)
    stage_order = table["stage"].map({"initial": 0, "recorded": 1, "final": 2})
    table = table.assign(_stage=stage_order)
    table = table.sort_values(["model", "depth", "_stage", "epoch", "inputs"], kind="stable")
    table = table.drop(columns="_stage").reset_index(drop=True)
    table.insert(0, "experiment", experiment)
    return table
