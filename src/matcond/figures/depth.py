"""The depth formula's figure (docs/depth-theory.md): the Gauss-Newton operator's predictions of
the trained product of deep linear nets against the measurements."""

from __future__ import annotations

import numpy as np
import pandas as pd

from matcond.figures.axes import decade_scale, integer_axis
from matcond.figures.marks import legend_outside
from matcond.figures.style import Tables, error_axis, figure, palette, save, whiskers

# The line of each prediction (matcond.condition_number.depth_theory.PREDICTIONS) and its label,
# legible without docs/depth-theory.md (whose (a), (b), (m), (c) the table's labels use).
PREDICTION_STYLES = {
    "predicted_init": ":",
    "predicted_recorded": "-.",
    "predicted_flow": "--",
    "predicted_noise": (0, (1, 1)),
}
PREDICTION_LABELS = {
    "predicted_init": "predicted: GN operator frozen at init",
    "predicted_recorded": "predicted: GN operator of each saved epoch",
    "predicted_flow": "predicted: mean dynamics of the layers",
    "predicted_noise": "predicted: mean dynamics + label-noise floor",
}
MEASURED_LABEL = "measured (median, 95% CI)"


def _whiskers(ax, rows: pd.DataFrame, x, column: str, color, label: str | None) -> None:
    """``column`` with its ``{prefix}_ci_low/high`` interval as points with whiskers."""
    prefix = column.removesuffix("_median")
    low, high = rows[f"{prefix}_ci_low"], rows[f"{prefix}_ci_high"]
    whiskers(ax, x, rows[column], low, high, color=color, label=label)


def _ratio_band(ax, band: tuple[float, float]) -> None:
    ax.axhspan(*band, color="0.85", zorder=0, label=f"band {band[0]}-{band[1]}")
    ax.axhline(1.0, color="0.4", lw=0.8)


def depth_theory(tables: Tables, png: str, pdf: str, band=(0.8, 1.25)) -> None:
    """Top: median κ error vs depth at the largest width, measured (95 % interval) and each
    prediction, one panel per init scale. Bottom: the mean dynamics' ratio predicted / measured
    per width and init; the learned error's share in the initial GN operator's bottom
    eigenvectors; the ratio where the formula's assumptions break (ReLU, Adam, large lr)."""
    table = tables["depth_theory"].assign(init=lambda t: t["init_per_sqrt_dim"].round(2))
    kappa = table[table["component"] == "condition_number"]
    linear_sgd = kappa[(kappa["model"] == "deep_linear") & (kappa["optimizer"] == "sgd")]
    base_lr = linear_sgd["lr"].min()
    main = linear_sgd[linear_sgd["lr"] == base_lr]
    inits = sorted(main["init"].unique())
    widest = main["dim"].max()
    fig, axes = figure(max(len(inits), 3), width=4.6, nrows=2, height=3.8)
    for ax, init in zip(axes[0], inits, strict=False):
        cell = main[(main["init"] == init) & (main["dim"] == widest)]
        measured = cell[cell["prediction"] == "predicted_flow"].sort_values("depth")
        _whiskers(ax, measured, measured["depth"], "measured_median", "black", MEASURED_LABEL)
        for color, (prediction, style) in zip(palette(4), PREDICTION_STYLES.items(), strict=True):
            rows = cell[cell["prediction"] == prediction].sort_values("depth")
            if rows.empty:
                continue
            ax.plot(
                rows["depth"],
                rows["predicted_median"],
                linestyle=style,
                marker=".",
                color=color,
                label=PREDICTION_LABELS.get(prediction, rows["prediction_label"].iloc[0]),
            )
        ax.set_title(f"d = {widest}, init {init:g}/sqrt(d)", fontsize=9)
        ax.set_xlabel("depth L")
        integer_axis(ax.xaxis)
        error_axis(ax, "product kappa relative error\n(median, 95% CI)")
    legend_outside(axes[0][-1], fontsize=7)
    ratio_ax, overlap_ax, limits_ax = axes[1][:3]
    flow = main[main["prediction"] == "predicted_flow"]
    cells = list(flow.groupby(["dim", "init"]))
    for k, (color, ((dim, init), rows)) in enumerate(zip(palette(len(cells)), cells, strict=True)):
        rows = rows.sort_values("depth")
        shift = (k - (len(cells) - 1) / 2) * 0.06
        _whiskers(
            ratio_ax, rows, rows["depth"] + shift, "ratio", color, f"d={dim}, {init:g}/sqrt(d)"
        )
        overlap_ax.plot(rows["depth"], rows["bottom_overlap_median"], "o-", color=color)
    _ratio_band(ratio_ax, band)
    decade_scale(ratio_ax)
    integer_axis(ratio_ax.xaxis, overlap_ax.xaxis)
    ratio_ax.set_xlabel("depth L")
    ratio_ax.set_ylabel("mean-dynamics prediction /\nmeasured median (95% CI)")
    ratio_ax.set_title("mean-dynamics prediction vs measured", fontsize=9)
    legend_outside(ratio_ax, fontsize=7)
    overlap_ax.axhline(flow["bottom_overlap_chance"].median(), color="0.4", ls=":", label="chance")
    overlap_ax.set_xlabel("depth L")
    overlap_ax.set_ylabel("share of ||P_T - W*||^2")
    overlap_ax.set_title("learned error in K_0's bottom eigenvectors", fontsize=9)
    overlap_ax.set_ylim(0, 1)
    overlap_ax.legend(fontsize=7)
    _limits_panel(limits_ax, kappa, main, band)
    for ax in axes.flat[len(inits) : axes.shape[1]]:
        ax.set_visible(False)
    for ax in axes[1][3:]:
        ax.set_visible(False)
    save(fig, png, pdf)


def _limits_panel(ax, kappa: pd.DataFrame, main: pd.DataFrame, band) -> None:
    """The mean dynamics' ratio in the cells outside the formula's assumptions, beside the
    deep linear SGD cell they vary (depth 3 or the ReLU MLP's 2, init 1/sqrt(d))."""
    flow = kappa[kappa["prediction"] == "predicted_flow"]
    widest = flow["dim"].max()
    flow = flow[flow["dim"] == widest]
    flow = flow[flow["init"] == min(flow["init"], key=lambda init: abs(np.log(init)))]
    baseline = flow.index.isin(main.index) & (flow["depth"] == 3)
    others = ~flow.index.isin(main.index)
    rows = pd.concat([flow[baseline], flow[others]])
    if rows.empty:
        ax.set_visible(False)
        return
    labels = [
        "ReLU MLP" if r.model == "relu_mlp" else f"L={int(r.depth)} {r.optimizer} lr {r.lr:g}"
        for r in rows.itertuples()
    ]
    _whiskers(ax, rows, np.arange(len(rows)), "ratio", "C0", None)
    _ratio_band(ax, band)
    ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_xlabel("setting")
    decade_scale(ax)
    ax.set_ylabel("mean-dynamics prediction /\nmeasured median (95% CI)")
    init = flow["init"].iloc[0]
    title = f"mean dynamics off its assumptions\n(d = {widest}, init {init:g}/sqrt(d))"
    ax.set_title(title, fontsize=9)
